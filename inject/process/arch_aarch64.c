/* SPDX-License-Identifier: MIT */
/* arch_aarch64.c - arch.h for aarch64 (arm64): PTRACE_GETREGSET with
 * NT_PRSTATUS, NT_ARM_SYSTEM_CALL (the syscall number), NT_PRFPREG and
 * NT_ARM_SVE (the vector state), NT_ARM_TLS (tpidr_el0); calls return
 * through the link register x30; "svc #0" with the number in x8.
 *
 * A syscall interrupted by our stop: the kernel (arch/arm64/kernel/
 * signal.c, do_signal) prepares its restart before the stop, not after
 * as x86-64 does: the thread shows pc on its "svc #0" again, x0 back to
 * the first argument, the number still in x8, and no syscall in
 * progress.  So the saved registers restart it as they are; a
 * -ERESTART_RESTARTBLOCK one (a relative nanosleep) restarts from the
 * beginning rather than through restart_syscall.
 *
 * Guarded calls return into the vdso's __kernel_rt_sigreturn (glibc has
 * no rt_sigreturn trampoline of its own on aarch64) on a frame of ours:
 * mwi_arch_sigframe. */
#define _GNU_SOURCE
#include "process/arch.h"
#include "process/maps.h"
#include "process/ptrace.h"
#include "common/procmaps.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif
#ifndef NT_ARM_SVE
#define NT_ARM_SVE 0x405
#endif
#ifndef NT_ARM_TLS
#define NT_ARM_TLS 0x401
#endif
#ifndef R_AARCH64_TLS_TPREL64
#define R_AARCH64_TLS_TPREL64 1030
#endif

#define INSN_SVC0 0xd4000001u		/* svc #0 */
#define PSTATE_SS (1ull << 21)		/* single step */
#define PSTATE_BTYPE (3ull << 10)	/* branch target identification */

const int mwi_arch_settle_skips = 0;
const int mwi_arch_guarded_keeps_result = 1;
const uint32_t mwi_arch_audit = AUDIT_ARCH_AARCH64;
const uint32_t mwi_arch_tpoff_reloc = R_AARCH64_TLS_TPREL64;

/* __kernel_rt_sigreturn (the vdso's; glibc has none of its own) */
const unsigned char mwi_arch_sigreturn_code[] = {
	0x68, 0x11, 0x80, 0xd2,		/* mov x8, #139 (rt_sigreturn) */
	0x01, 0x00, 0x00, 0xd4,		/* svc #0 */
};
const size_t mwi_arch_sigreturn_len = sizeof(mwi_arch_sigreturn_code);

/* gdb's own calls restore aarch64's registers: no guard */
size_t mwi_arch_gdb_guard(const unsigned char **code, size_t *area)
{
	*code = NULL;
	*area = 0;
	return 0;
}

static int regset(int req, pid_t tid, int type, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return ptrace(req, tid, (void *)(long)type, &iov) ? -errno : 0;
}

int mwi_arch_get_regs(pid_t tid, mwi_regs *r)
{
	int ret;

	memset(r, 0, sizeof(*r));
	if ((ret = regset(PTRACE_GETREGSET, tid, NT_PRSTATUS, &r->r,
			  sizeof(r->r))))
		return ret;
	if (regset(PTRACE_GETREGSET, tid, NT_ARM_SYSTEM_CALL, &r->syscallno,
		   sizeof(r->syscallno)))
		r->syscallno = -1;
	return 0;
}

int mwi_arch_set_regs(pid_t tid, const mwi_regs *r)
{
	int syscallno = r->syscallno, ret;

	/* the number first: at a syscall-entry stop it decides whether the
	 * syscall runs; then the registers */
	if ((ret = regset(PTRACE_SETREGSET, tid, NT_ARM_SYSTEM_CALL,
			  &syscallno, sizeof(syscallno))))
		return ret;
	return regset(PTRACE_SETREGSET, tid, NT_PRSTATUS, (void *)&r->r,
		      sizeof(r->r));
}

uintptr_t mwi_arch_pc(const mwi_regs *r)
{
	return r->r.pc;
}

void mwi_arch_set_pc(mwi_regs *r, uintptr_t pc)
{
	r->r.pc = pc;
}

uintptr_t mwi_arch_sp(const mwi_regs *r)
{
	return r->r.sp;
}

uint64_t mwi_arch_retval(const mwi_regs *r)
{
	return r->r.regs[0];
}

/* @buf: a struct user_fpsimd_state (NT_PRFPREG), then, when the thread
 * has live SVE state, NT_ARM_SVE's whole set (which holds the V
 * registers' bits too): restored in its place, NT_PRFPREG's would
 * drop the upper bits of the Z registers and the P registers. */
struct ext_head {
	uint32_t fp_len, sve_len;
};

int mwi_arch_save_ext(pid_t tid, unsigned char *buf, size_t cap,
		      size_t *len)
{
	struct ext_head h = { 0, 0 };
	struct iovec iov;
	size_t at = sizeof(h);

	if (cap < at + sizeof(struct user_fpsimd_state))
		return -E2BIG;
	iov.iov_base = buf + at;
	iov.iov_len = sizeof(struct user_fpsimd_state);
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov))
		return -errno;
	h.fp_len = (uint32_t)iov.iov_len;
	at += iov.iov_len;
	iov.iov_base = buf + at;
	iov.iov_len = cap - at;
	if (!ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SVE, &iov) &&
	    iov.iov_len >= sizeof(struct user_sve_header) &&
	    (((struct user_sve_header *)(buf + at))->flags &
	     SVE_PT_REGS_MASK) == SVE_PT_REGS_SVE)
		h.sve_len = (uint32_t)iov.iov_len;
	memcpy(buf, &h, sizeof(h));
	*len = at + h.sve_len;
	return 0;
}

void mwi_arch_restore_ext(pid_t tid, unsigned char *buf, size_t len)
{
	struct ext_head h;
	struct iovec iov;

	if (len < sizeof(h))
		return;
	memcpy(&h, buf, sizeof(h));
	if (h.sve_len) {
		iov.iov_base = buf + sizeof(h) + h.fp_len;
		iov.iov_len = h.sve_len;
		if (!ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SVE, &iov))
			return;
	}
	iov.iov_base = buf + sizeof(h);
	iov.iov_len = h.fp_len;
	ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRFPREG, &iov);
}

/* the restart is already prepared (see the top of this file) */
void mwi_arch_restartable(const mwi_regs *in, mwi_regs *out)
{
	*out = *in;
	out->syscallno = -1;
}

void mwi_arch_no_syscall(mwi_regs *r)
{
	r->syscallno = -1;
}

/* Blocked in a syscall and interrupted: pc is back on its "svc #0" with
 * the number in x8 (its restart); or it returned EINTR: pc just past
 * it.  A thread merely about to enter one of the listed syscalls (pc on
 * the svc of a syscall wrapper) holds no more locks than one inside. */
int mwi_arch_in_syscall(struct mwi_thread *t, const mwi_regs *r, long *nr)
{
	uint32_t insn;

	*nr = (long)r->r.regs[8];
	if (!mwi_peek(t, r->r.pc, &insn, sizeof(insn)) && insn == INSN_SVC0)
		return 1;
	return (long)r->r.regs[0] == -EINTR && r->r.pc >= 4 &&
	       !mwi_peek(t, r->r.pc - 4, &insn, sizeof(insn)) &&
	       insn == INSN_SVC0;
}

/* sp is 16-byte aligned at all times (AAPCS64, and the CPU checks) */
uintptr_t mwi_arch_call_sp(uintptr_t below)
{
	return below & ~(uintptr_t)15;
}

int mwi_arch_set_call(struct mwi_thread *t, mwi_regs *r, uintptr_t fn,
		      uintptr_t sp, uint64_t ret_addr, const uint64_t *args,
		      int nargs)
{
	int i;

	(void)t;
	for (i = 0; i < nargs && i < 8; i++)
		r->r.regs[i] = args[i];
	r->r.regs[30] = ret_addr;	/* the link register */
	r->r.sp = sp;
	r->r.pc = fn;
	/* no syscall restart, and at a syscall-entry stop: skip it */
	r->syscallno = -1;
	/* no single step, and no BTI check on the jump to @fn */
	r->r.pstate &= ~(PSTATE_SS | PSTATE_BTYPE);
	return 0;
}

/* tpidr_el0; TLS above it (variant I) */
int mwi_arch_thread_pointer(struct mwi_thread *t, uint64_t *tp)
{
	return regset(PTRACE_GETREGSET, t->tid, NT_ARM_TLS, tp, sizeof(*tp));
}

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* The GOT slot a PLT stub at @stub jumps through:
 *   [bti c] adrp x16, PAGE; ldr x17, [x16, #OFF]; add x16, ...; br x17
 * 0 or -ENOENT. */
static int plt_slot(struct mwi_thread *t, uintptr_t stub, uintptr_t *slot)
{
	uint32_t c[3];
	unsigned i = 0;
	int64_t page;

	if (mwi_peek(t, stub, c, sizeof(c)))
		return -ENOENT;
	if (c[0] == 0xd503245fu)	/* bti c */
		i = 1;
	if ((c[i] & 0x9f00001fu) != 0x90000010u ||	/* adrp x16 */
	    (c[i + 1] & 0xffc003ffu) != 0xf9400211u)	/* ldr x17, [x16] */
		return -ENOENT;
	page = sext(((uint64_t)(c[i] >> 5 & 0x7ffff) << 2 |
		     (c[i] >> 29 & 3)) << 12, 33);
	*slot = ((stub + 4 * i) & ~(uintptr_t)0xfff) + (uintptr_t)page +
		(uintptr_t)(c[i + 1] >> 10 & 0xfff) * 8;
	return 0;
}

/* The leaves keep their return address in x30 and call nothing: x30 is
 * an address in code outside libc and the loader, just past a "bl" to a
 * leaf entry or to a PLT stub whose slot holds one, and pc lies in the
 * code that leaf's walk reached (leaves.h; so an x30 left from a leaf
 * that has returned is never taken for one while pc is elsewhere in
 * libc).  A frame holding a lock (memcpy called by realloc) has x30
 * inside libc. */
int mwi_arch_in_called_leaf(struct mwi_thread *t, const struct mwi_maps *m,
			    const mwi_regs *r)
{
	uint64_t ret = r->r.regs[30], dest;
	uintptr_t slot;
	uint32_t insn;

	if (!m->nleaf || r->r.pc < m->libc_lo || r->r.pc >= m->libc_hi ||
	    mwi_maps_unsafe(m, ret) || ret < 4 ||
	    mwi_peek(t, ret - 4, &insn, sizeof(insn)) ||
	    (insn & 0xfc000000u) != 0x94000000u)	/* bl */
		return 0;
	dest = ret - 4 + (uint64_t)(sext(insn & 0x3ffffff, 26) * 4);
	if (mwi_maps_in_leaf(m, dest, r->r.pc))
		return 1;
	return !plt_slot(t, dest, &slot) &&
	       !mwi_peek(t, slot, &dest, sizeof(dest)) &&
	       mwi_maps_in_leaf(m, dest, r->r.pc);
}

/* The kernel's signal frame (arch/arm64/include/uapi/asm/sigcontext.h,
 * ucontext.h; kernel/signal.c): rt_sigreturn reads it at sp. */
struct fpsimd_ctx {		/* struct fpsimd_context */
	uint32_t magic, size;	/* FPSIMD_MAGIC, 528 */
	uint32_t fpsr, fpcr;
	__uint128_t vregs[32];
};

struct frame {			/* struct rt_sigframe */
	unsigned char info[128];	/* siginfo: rt_sigreturn ignores it */
	struct {		/* struct ucontext */
		uint64_t uc_flags, uc_link;
		stack_t uc_stack;
		uint64_t uc_sigmask;
		unsigned char unused[120];	/* to glibc's 1024-bit sigset */
		struct {	/* struct sigcontext */
			uint64_t fault_address;
			uint64_t regs[31], sp, pc, pstate;
			/* fpsimd_context, then a {0, 0} terminator */
			unsigned char reserved[4096] __attribute__((aligned(16)));
		} mc __attribute__((aligned(16)));
	} uc;
	uint64_t record[2];	/* the frame record (fp, lr) after it */
};

#define FPSIMD_MAGIC_ 0x46508001u
_Static_assert(offsetof(struct frame, uc.uc_stack) == 144, "uc_stack");
_Static_assert(offsetof(struct frame, uc.uc_sigmask) == 168, "uc_sigmask");
_Static_assert(offsetof(struct frame, uc.mc) == 304, "uc_mcontext");
_Static_assert(offsetof(struct frame, uc.mc.pc) == 304 + 264, "pc");
_Static_assert(offsetof(struct frame, uc.mc.reserved) == 304 + 288,
	       "__reserved");
_Static_assert(sizeof(struct fpsimd_ctx) == 528, "fpsimd_context");

/* The frame holds the general registers and the FP/SIMD ones (v0-v31,
 * fpsr, fpcr): rt_sigreturn after our death restores those; the upper
 * bits of live SVE registers are not in it (the kernel drops them at
 * every syscall anyway), which is the one loss on that path. */
int mwi_arch_sigframe(struct mwi_thread *t, const mwi_regs *resume,
		      uint64_t sigmask, const unsigned char *ext,
		      size_t ext_len, uintptr_t top, uintptr_t floor,
		      uintptr_t *sp, uintptr_t *altstack)
{
	static struct frame f;
	struct fpsimd_ctx fp;
	struct ext_head h;
	uintptr_t at;

	if (ext_len < sizeof(h))
		return -ENOTSUP;
	memcpy(&h, ext, sizeof(h));
	if (h.fp_len != 528 || ext_len < sizeof(h) + h.fp_len)
		return -ENOTSUP;
	memset(&f, 0, sizeof(f));
	f.uc.uc_stack.ss_flags = SS_DISABLE;
	f.uc.uc_sigmask = sigmask;
	memcpy(f.uc.mc.regs, resume->r.regs, sizeof(f.uc.mc.regs));
	f.uc.mc.sp = resume->r.sp;
	f.uc.mc.pc = resume->r.pc;
	f.uc.mc.pstate = resume->r.pstate;
	/* user_fpsimd_state: vregs[32], fpsr, fpcr */
	memcpy(fp.vregs, ext + sizeof(h), sizeof(fp.vregs));
	memcpy(&fp.fpsr, ext + sizeof(h) + 512, 4);
	memcpy(&fp.fpcr, ext + sizeof(h) + 516, 4);
	fp.magic = FPSIMD_MAGIC_;
	fp.size = sizeof(fp);
	memcpy(f.uc.mc.reserved, &fp, sizeof(fp));	/* then {0, 0} */
	at = (top - sizeof(f)) & ~(uintptr_t)15;
	if (at < floor)
		return -E2BIG;
	if (mwi_poke(t, at, &f, sizeof(f)))
		return -EFAULT;
	*sp = at;
	*altstack = at + offsetof(struct frame, uc.uc_stack);
	return 0;
}

static int vdso_line(const struct mw_maps_entry *e, void *arg)
{
	uintptr_t *range = arg;

	if (e->pathlen != 6 || memcmp(e->path, "[vdso]", 6))
		return 0;
	range[0] = e->lo;
	range[1] = e->hi;
	return 1;
}

int mwi_arch_sigreturn_extra(pid_t pid, uintptr_t *addr)
{
	unsigned char code[65536];
	char buf[4096];
	uintptr_t range[2] = { 0, 0 }, lo, hi;
	struct iovec local, remote;
	ssize_t n;
	int fd;

	snprintf(buf, sizeof(buf), "/proc/%d/maps", (int)pid);
	if ((fd = open(buf, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	mw_maps_each(fd, buf, sizeof(buf), vdso_line, range);
	close(fd);
	lo = range[0];
	hi = range[1];
	if (!lo || hi <= lo || hi - lo > sizeof(code))
		return -ENOENT;
	local.iov_base = code;
	local.iov_len = hi - lo;
	remote.iov_base = (void *)lo;
	remote.iov_len = hi - lo;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < (ssize_t)mwi_arch_sigreturn_len)
		return -ENOENT;
	for (size_t i = 0; i + mwi_arch_sigreturn_len <= (size_t)n; i += 4)
		if (!memcmp(code + i, mwi_arch_sigreturn_code,
			    mwi_arch_sigreturn_len)) {
			*addr = lo + i;
			return 0;
		}
	return -ENOENT;
}
