# SPDX-License-Identifier: MIT
# attach.py - the gdb backend's program (see inject/backends/gdb.h), run by
# `gdb -p PID -batch` inside a "python" command.  gdb.c embeds this file
# at build time and defines before it:
#   PID     the target
#   LIBC    (lo, hi): libc's executable mapping
#   LEAF    entries of libc's lock-free string routines (maps.c)
#   DLERR   libc's GOT slot of its thread's dlerror record, or 0
#           (inject/process/dlerror.h)
#   LIB, FN, ARG    the call: dlopen(LIB), then int FN(const char *ARG)
#   SAFE    blocking syscalls that hold no lock (syscalls.c)
#   UNSAFE  [(lo, hi)]: code of libc, the loader and our libraries
#   GUARD   arch.h's gdb guard (x86-64), or empty: gdb's own calls
#   AREA    the bytes the guard's save area takes
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
# inject/process/dlerror.c) rather than fetched by one more call into the target.
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


def reg(name):
    v = gdb.parse_and_eval('$%s' % name)
    return int(v) if v.type.code == gdb.TYPE_CODE_FLAGS else \
        int(v.cast(gdb.lookup_type('long')))


def set_reg(name, value):
    gdb.execute('set $%s = %d' % (name, value), to_string=True)


def write(addr, b):
    gdb.selected_inferior().write_memory(addr, b)


def fn_addr(name):
    return int(gdb.parse_and_eval('(long)%s' % name))


def auxv(key):
    with open('/proc/%d/auxv' % PID, 'rb') as f:
        a = f.read()
    for i in range(0, len(a) - 15, 16):
        if le(a[i:i + 8]) == key:
            return le(a[i + 8:i + 16])
    return 0


class CallFailed(Exception):
    pass


class GdbCalls:
    """The calls an attach makes, as gdb makes them: aarch64, where they
    put every register back."""

    def dlopen(self, lib):
        return int(gdb.parse_and_eval('(void*)dlopen("%s", 4098)' % lib))

    def dlsym(self, h, name):
        return int(gdb.parse_and_eval('(void*)dlsym((void*)%d, "%s")' %
                                      (h, name)))

    def fn(self, addr, arg):
        return int(gdb.parse_and_eval('((int(*)(const char*))%d)("%s")' %
                                      (addr, arg)))

    def open(self):
        pass

    def close(self):
        pass


class GuardedCalls:
    """x86-64: the calls made as the native backend makes them.  gdb's
    inferior calls end by writing the extended state back where Intel's
    CPUs keep it (gdb 13), which zeroes zmm16-19 of a thread in an EVEX
    memcpy where the CPU keeps it elsewhere (AMD's Zen 4).  Here gdb
    writes only memory and the general registers: each call goes through
    GUARD, which saves and restores the extended state in the target
    itself, in a mapping of ours (code, strings, save area), and returns
    to a breakpoint at the program's entry; close() unmaps it and puts
    the registers back.
    Registers are read and written in the newest frame (another may be
    selected, and its registers are saved slots on the stack), and the
    pc is set by jump: where the thread stopped in inlined code, frame 0
    is an inline frame and `set $rip` there does not reach the thread."""

    GPRS = ('rax', 'rbx', 'rcx', 'rdx', 'rsi', 'rdi', 'rbp', 'rsp', 'r8',
            'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15', 'eflags')
    ARGS = ('rdi', 'rsi', 'rdx', 'rcx', 'r8', 'r9')
    PAGE = 4096

    def __init__(self, thread):
        self.thread = thread
        self.frame0()
        self.saved = [(r, reg(r)) for r in self.GPRS]
        self.pc, self.orig_rax = reg('rip'), reg('orig_rax')
        self.sp = (reg('rsp') - 256) & ~15      # below the red zone
        self.eflags = reg('eflags') & ~0x500    # no TF, no DF
        self.len = self.PAGE + -(-AREA // self.PAGE) * self.PAGE
        self.bp = self.page = None

    def frame0(self):
        self.thread.switch()
        gdb.newest_frame().select()

    def open(self):
        self.ret = auxv(9)      # AT_ENTRY: _start, never run again
        self.bp = gdb.Breakpoint('*%d' % self.ret, internal=True)
        page = self.plain(fn_addr('mmap'), 0, self.len, 3, 0x22, -1, 0)
        if page % (1 << 64) > (1 << 64) - 4096:
            raise CallFailed('mmap in the target: errno %d' % -page)
        self.page = page
        write(page, GUARD)
        self.strings = page + len(GUARD)
        if self.plain(fn_addr('mprotect'), page, self.PAGE, 5):
            raise CallFailed('mprotect in the target failed')

    def plain(self, fn, *args):
        """fn(args), returning to the breakpoint; orig_rax -1 and rax 0:
        no syscall restart onto our pc"""
        self.frame0()
        write(self.sp - 8, self.ret.to_bytes(8, 'little'))
        for r, v in zip(self.ARGS, args):
            set_reg(r, v)
        for r, v in (('rsp', self.sp - 8), ('rax', 0),
                     ('eflags', self.eflags), ('orig_rax', -1)):
            set_reg(r, v)
        gdb.execute('jump *%d' % fn, to_string=True)
        t = gdb.selected_thread()
        if t is None or t.ptid != self.thread.ptid or reg('rip') != self.ret:
            raise CallFailed('the call stopped at %#x in thread %d' %
                             (reg('rip') % (1 << 64), t.ptid[1] if t else 0))
        return reg('rax')

    def string(self, s):
        b = s.encode() + b'\0'
        at = self.strings
        write(at, b)
        self.strings += len(b)
        return at

    def guarded(self, fn, a0, a1=0):
        return self.plain(self.page, fn, a0, a1, self.page + self.PAGE)

    def dlopen(self, lib):
        return self.guarded(fn_addr('dlopen'), self.string(lib), 4098)

    def dlsym(self, h, name):
        return self.guarded(fn_addr('dlsym'), h, self.string(name))

    def fn(self, addr, arg):
        r = self.guarded(addr, self.string(arg)) % (1 << 32)
        return r - (1 << 32) if r >= (1 << 31) else r

    def close(self):
        """Everything put back, also after a failed call (a fault in
        another thread is not passed on by us: it recurs after we have
        detached)"""
        try:
            if self.page is not None:
                self.plain(fn_addr('munmap'), self.page, self.len)
        finally:
            gdb.execute('handle SIGSEGV SIGBUS SIGILL SIGFPE nopass',
                        to_string=True)
            self.frame0()
            for r, v in self.saved:
                set_reg(r, v)
            # orig_rax last: writing the pc may reset it
            set_reg('rip', self.pc)
            set_reg('orig_rax', self.orig_rax)
            if self.bp is not None:
                self.bp.delete()


def call(thread):
    c = GuardedCalls(thread) if GUARD else GdbCalls()
    try:
        c.open()
        h = c.dlopen(LIB)
        print('MW_HANDLE=%#x' % (h % (1 << 64)))
        if h == 0:
            print('MW_ERR=%s' % dlerror_message())
            return
        s = c.dlsym(h, FN)
        if s == 0:
            print('MW_NOSYM=1')
            return
        print('MW_RESULT=%d' % c.fn(s, ARG))
    finally:
        c.close()


# libc's symbols (dlopen, dlsym): glibc's libc.so.6, or musl's, which is
# its loader and which gdb names by the program's interpreter path
# (/lib/ld-musl-ARCH.so.1; Alpine also has libc.musl-ARCH.so.1)
for libc in ('libc.so', 'ld-musl-', 'libc.musl-'):
    gdb.execute('sharedlibrary %s' % libc, to_string=True)
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
    try:
        call(chosen)
    except CallFailed as e:
        print('MW_CALLFAILED=%s' % e)
gdb.execute('detach')
