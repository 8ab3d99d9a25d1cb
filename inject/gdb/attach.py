# SPDX-License-Identifier: MIT
# attach.py - the gdb backend's program (see inject/gdb.h), run by
# `gdb -p PID -batch` inside a "python" command.  gdb.c embeds this file
# at build time and defines before it:
#   PID     the target
#   LIBC    (lo, hi): libc's executable mapping
#   LEAF    entries of libc's lock-free string routines (maps.c)
#   DLERR   libc's GOT slot of its thread's dlerror record, or 0
#           (inject/dlerror.h)
#   LIB, FN, ARG    the call: dlopen(LIB), then int FN(const char *ARG)
#   SAFE    blocking syscalls that hold no lock (syscalls.c)
#   UNSAFE  [(lo, hi)]: code of libc, the loader and our libraries
# It prints MW_* markers that gdb.c reads; it never waits: with no
# thread at a safe point it detaches at once and gdb.c tries again.
import os

import gdb

X86_64 = 'x86-64' in gdb.selected_frame().architecture().name()


def syscall_of(tid):
    try:
        with open('/proc/%d/task/%d/syscall' % (PID, tid)) as f:
            return int(f.read().split()[0])
    except Exception:
        return -1


def rd(addr, n):
    return bytes(gdb.selected_inferior().read_memory(addr, n))


def le(b, signed=False):
    return int.from_bytes(b, 'little', signed=signed)


# Inside a libc string routine called from code of its own: see
# in_leaf_called_from_outside in safepoint.c.
def in_leaf(pc, sp, bad):
    # x86-64's call sequences (arch_x86_64.c); elsewhere libc stays unsafe
    if not LEAF or not LIBC[0] <= pc < LIBC[1] or not X86_64:
        return False
    try:
        ret = le(rd(sp, 8))
        if any(lo <= ret < hi for lo, hi in bad):
            return False
        c = rd(ret - 6, 6)
        disp = le(c[2:6], True)
        if c[0:2] == b'\xff\x15':
            return le(rd(ret + disp, 8)) in LEAF
        if c[1] != 0xe8:
            return False
        dest = ret + disp
        if dest in LEAF:
            return True
        s = rd(dest, 12)
        i = 4 if s[0:4] == b'\xf3\x0f\x1e\xfa' else 0
        i += 1 if s[i] == 0xf2 else 0
        if s[i:i + 2] != b'\xff\x25':
            return False
        return le(rd(dest + i + 6 + le(s[i + 2:i + 6], True), 8)) in LEAF
    except Exception:  # unreadable, or not an address at all
        return False


# aarch64: the kernel rewinds an interrupted syscall onto its "svc #0"
# (number in x8) before the stop, and /proc/PID/task/TID/syscall then
# shows none (see arch_aarch64.c): such a thread is blocked in it.
def at_safe_svc(pc):
    if X86_64:
        return False
    try:
        return le(rd(pc, 4)) == 0xd4000001 and \
            int(gdb.parse_and_eval('(long)$x8')) in SAFE
    except Exception:
        return False


def c_string(addr, limit=4096):
    b = rd(addr, 1)
    while b[-1] != 0 and len(b) < limit:
        b += rd(addr + len(b), 1)
    return b.rstrip(b'\0').decode('utf-8', 'replace')


# What dlerror() would return after a failed dlopen, read from the
# thread's record of it (glibc 2.34+'s struct dl_action_result, see
# inject/dlerror.c) rather than fetched by one more call into the target.
def dlerror_message():
    if not DLERR:
        return '?'
    try:
        tpoff = le(rd(DLERR, 8), True)
        # the thread pointer: x86-64's fs_base, aarch64's tpidr_el0
        tp = int(gdb.parse_and_eval('(unsigned long)$%s' %
                                    ('fs_base' if X86_64 else 'tpidr')))
        at = le(rd((tp + tpoff) % (1 << 64), 8))
        if at == (1 << 64) - 1:
            return 'out of memory'
        r = rd(at, 24)
        errcode, source, returned = le(r[0:4], True), r[4], r[5]
        objname, errstring = le(r[8:16]), le(r[16:24])
        if not 0 <= errcode < 4096 or source > 2 or returned > 1 or \
           not objname or not errstring:
            return '?'
        obj = c_string(objname)
        msg = obj + (': ' if obj else '') + c_string(errstring, 512)
        if errcode:
            msg += ': ' + os.strerror(errcode)
        return msg.replace('\n', ' ')
    except Exception:  # unreadable: not the record we know
        return '?'


def call():
    h = gdb.parse_and_eval('(void*)dlopen("%s", 4098)' % LIB)
    print('MW_HANDLE=%#x' % int(h))
    if int(h) == 0:
        print('MW_ERR=%s' % dlerror_message())
        return
    s = gdb.parse_and_eval('(void*)dlsym((void*)%d, "%s")' % (int(h), FN))
    if int(s) == 0:
        print('MW_NOSYM=1')
        return
    r = gdb.parse_and_eval('((int(*)(const char*))%d)("%s")' % (int(s), ARG))
    print('MW_RESULT=%d' % int(r))


gdb.execute('sharedlibrary libc.so', to_string=True)
chosen = None
threads = gdb.selected_inferior().threads()
for t in threads:
    if syscall_of(t.ptid[1]) in SAFE:
        chosen = t
        if t.ptid[1] == PID:
            break
# else a thread stopped by the attach in code of its own (outside libc,
# the loader and our libraries) or in a libc string routine that code
# called, as the native backend's stops
if chosen is None:
    bad = UNSAFE
    for t in threads:
        t.switch()
        pc = int(gdb.parse_and_eval('(unsigned long)$pc'))
        sp = int(gdb.parse_and_eval('(unsigned long)$sp'))
        if syscall_of(t.ptid[1]) == -1 and \
           (not any(lo <= pc < hi for lo, hi in bad) or in_leaf(pc, sp, bad)
            or at_safe_svc(pc)):
            chosen = t
            break
if chosen is None:
    print('MW_NOSAFE=1')
else:
    chosen.switch()
    print('MW_THREAD=%d' % chosen.ptid[1])
    call()
gdb.execute('detach')
