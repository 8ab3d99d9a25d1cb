/* SPDX-License-Identifier: MIT */
/* arch_x86_64.c - arch.h for x86-64: PTRACE_GETREGS, the xsave area,
 * orig_rax, "call" with its return address on the stack, fs_base, the
 * signal frame of sigframe_x86_64.c. */
#define _GNU_SOURCE
#include "process/arch.h"
#include "process/maps.h"
#include "process/ptrace.h"
#include "process/sigframe_x86_64.h"

#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <linux/audit.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

const int mwi_arch_settle_skips = 1;
const int mwi_arch_guarded_keeps_result = 0;
const uint32_t mwi_arch_audit = AUDIT_ARCH_X86_64;
const uint32_t mwi_arch_tpoff_reloc = R_X86_64_TPOFF64;

/* glibc's signal trampoline __restore_rt: rt_sigreturn. */
const unsigned char mwi_arch_sigreturn_code[] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00,	/* mov $15, %rax */
	0x0f, 0x05,					/* syscall */
};
const size_t mwi_arch_sigreturn_len = sizeof(mwi_arch_sigreturn_code);

/* guard(fn, a0, a1, area): the state saved with xsave64 (every component
 * XCR0 enables) or, without XSAVE, fxsave64: the two differ only in the
 * ModRM bytes at 0x14 and 0x30. */
static unsigned char guard_code[] = {
	0x53,				/* push %rbx */
	0x48, 0x89, 0xcb,		/* mov %rcx, %rbx: the area */
	0x49, 0x89, 0xd0,		/* mov %rdx, %r8 */
	0xb8, 0xff, 0xff, 0xff, 0xff,	/* mov $-1, %eax: every component */
	0xba, 0xff, 0xff, 0xff, 0xff,	/* mov $-1, %edx */
	0x48, 0x0f, 0xae, 0x23,		/* xsave64 (%rbx) */
	0x48, 0x89, 0xf8,		/* mov %rdi, %rax */
	0x48, 0x89, 0xf7,		/* mov %rsi, %rdi */
	0x4c, 0x89, 0xc6,		/* mov %r8, %rsi */
	0xff, 0xd0,			/* call *%rax */
	0x49, 0x89, 0xc0,		/* mov %rax, %r8 */
	0xb8, 0xff, 0xff, 0xff, 0xff,	/* mov $-1, %eax */
	0xba, 0xff, 0xff, 0xff, 0xff,	/* mov $-1, %edx */
	0x48, 0x0f, 0xae, 0x2b,		/* xrstor64 (%rbx) */
	0x4c, 0x89, 0xc0,		/* mov %r8, %rax */
	0x5b,				/* pop %rbx */
	0xc3,				/* ret */
};

size_t mwi_arch_gdb_guard(const unsigned char **code, size_t *area)
{
	unsigned int a, b, c, d;

	__cpuid(1, a, b, c, d);
	if (c & bit_OSXSAVE) {
		__cpuid_count(0xd, 0, a, b, c, d);
		*area = b;	/* the size XCR0's components take */
	} else {
		guard_code[0x14] = 0x03;	/* fxsave64 (%rbx) */
		guard_code[0x30] = 0x0b;	/* fxrstor64 (%rbx) */
		*area = 512;
	}
	*code = guard_code;
	return sizeof(guard_code);
}

int mwi_arch_get_regs(pid_t tid, mwi_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, 0, r) ? -errno : 0;
}

int mwi_arch_set_regs(pid_t tid, const mwi_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, 0, r) ? -errno : 0;
}

uintptr_t mwi_arch_pc(const mwi_regs *r)
{
	return r->rip;
}

void mwi_arch_set_pc(mwi_regs *r, uintptr_t pc)
{
	r->rip = pc;
}

uintptr_t mwi_arch_sp(const mwi_regs *r)
{
	return r->rsp;
}

uint64_t mwi_arch_retval(const mwi_regs *r)
{
	return r->rax;
}

int mwi_arch_save_ext(pid_t tid, unsigned char *buf, size_t cap,
		      size_t *len)
{
	struct iovec iov = { buf, cap };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov))
		return -errno;
	*len = iov.iov_len;
	return 0;
}

void mwi_arch_restore_ext(pid_t tid, unsigned char *buf, size_t len)
{
	struct iovec iov = { buf, len };

	ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov);
}

void mwi_arch_restartable(const mwi_regs *in, mwi_regs *out)
{
	long rax = (long)in->rax;

	*out = *in;
	if ((long)in->orig_rax >= 0) {
		if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
		    rax == -ERESTARTNOHAND) {
			out->rax = in->orig_rax;
			out->rip -= 2;
		} else if (rax == -ERESTART_RESTARTBLOCK) {
			out->rax = SYS_restart_syscall;
			out->rip -= 2;
		}
	}
	out->orig_rax = (unsigned long long)-1;
}

void mwi_arch_no_syscall(mwi_regs *r)
{
	r->orig_rax = (unsigned long long)-1;
}

int mwi_arch_in_syscall(struct mwi_thread *t, const mwi_regs *r, long *nr)
{
	long rax = (long)r->rax;

	(void)t;
	*nr = (long)r->orig_rax;
	return (long)r->orig_rax >= 0 &&
	       (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
		rax == -ERESTARTNOHAND || rax == -ERESTART_RESTARTBLOCK ||
		rax == -EINTR);
}

/* rsp = 8 mod 16 at entry, as after a call */
uintptr_t mwi_arch_call_sp(uintptr_t below)
{
	return (below & ~(uintptr_t)15) - 8;
}

int mwi_arch_set_call(struct mwi_thread *t, mwi_regs *r, uintptr_t fn,
		      uintptr_t sp, uint64_t ret_addr, const uint64_t *args,
		      int nargs)
{
	/* glibc's fields are unsigned long long, musl's unsigned long */
	__typeof__(r->rdi) *argreg[6] = { &r->rdi, &r->rsi, &r->rdx, &r->rcx,
					  &r->r8, &r->r9 };
	int i;

	if (mwi_poke(t, sp, &ret_addr, sizeof(ret_addr)))
		return -EFAULT;
	for (i = 0; i < nargs && i < 6; i++)
		*argreg[i] = args[i];
	r->rsp = sp;
	r->rip = fn;
	r->rax = 0;
	/* no syscall restart, and at a syscall-entry stop: skip it */
	r->orig_rax = (unsigned long long)-1;
	r->eflags &= ~(0x400ull | 0x100ull);	/* clear DF and TF */
	return 0;
}

/* x86-64: the thread pointer is fs_base, TLS below it */
int mwi_arch_thread_pointer(struct mwi_thread *t, uint64_t *tp)
{
	*tp = t->saved.fs_base;
	return 0;
}

/* The slot a PLT stub at @stub jumps through: "jmp *disp32(%rip)", after
 * an endbr64 and a bnd prefix if any (.plt, .plt.sec).  0 or -ENOENT. */
static int plt_slot(struct mwi_thread *t, uintptr_t stub, uintptr_t *slot)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned char c[12];
	int32_t disp;
	size_t i = 0;

	if (mwi_peek(t, stub, c, sizeof(c)))
		return -ENOENT;
	if (!memcmp(c, endbr64, sizeof(endbr64)))
		i = 4;
	if (c[i] == 0xf2)
		i++;
	if (c[i] != 0xff || c[i + 1] != 0x25)
		return -ENOENT;
	memcpy(&disp, c + i + 2, sizeof(disp));
	*slot = stub + i + 6 + (intptr_t)disp;
	return 0;
}

/* The word at rsp is a return address into code outside libc and the
 * loader, just past a call to a leaf entry, either direct ("call
 * rel32", to a PLT stub or the entry) or through a GOT slot ("call
 * *disp32(%rip)", -fno-plt).  The leaves push nothing, so the word at
 * rsp stays their return address while they run; a frame anywhere below
 * that holds a lock (memcpy called by realloc or fwrite) has a return
 * address inside libc and fails the test. */
int mwi_arch_in_called_leaf(struct mwi_thread *t, const struct mwi_maps *m,
			    const mwi_regs *r)
{
	unsigned char c[6];
	uint64_t ret, dest;
	uintptr_t slot;
	int32_t disp;

	if (!m->nleaf || r->rip < m->libc_lo || r->rip >= m->libc_hi ||
	    mwi_peek(t, r->rsp, &ret, sizeof(ret)) ||
	    mwi_maps_unsafe(m, ret) || ret < sizeof(c) ||
	    mwi_peek(t, ret - sizeof(c), c, sizeof(c)))
		return 0;
	memcpy(&disp, c + 2, sizeof(disp));
	if (c[0] == 0xff && c[1] == 0x15 &&
	    !mwi_peek(t, ret + (intptr_t)disp, &dest, sizeof(dest)) &&
	    mwi_maps_leaf(m, dest))
		return 1;
	if (c[1] != 0xe8)	/* call rel32: the same 4 bytes */
		return 0;
	dest = ret + (intptr_t)disp;
	if (mwi_maps_leaf(m, dest))
		return 1;
	return !plt_slot(t, dest, &slot) &&
	       !mwi_peek(t, slot, &dest, sizeof(dest)) &&
	       mwi_maps_leaf(m, dest);
}

int mwi_arch_sigframe(struct mwi_thread *t, const mwi_regs *resume,
		      uint64_t sigmask, const unsigned char *ext,
		      size_t ext_len, uintptr_t top, uintptr_t floor,
		      uintptr_t *sp, uintptr_t *altstack)
{
	static struct mwi_rt_sigframe frame;
	static unsigned char xs[sizeof(t->xstate)];
	size_t fplen;
	uintptr_t fp, at;
	int ret;

	if (ext_len < MWI_XSAVE_MIN ||
	    ext_len + MWI_XSTATE_TRAILER > sizeof(xs))
		return -ENOTSUP;
	memcpy(xs, ext, ext_len);
	fplen = mwi_sigframe_fpstate(xs, ext_len);
	fp = (top - fplen) & ~(uintptr_t)63;
	/* rsp = 8 mod 16 at entry */
	at = ((fp - sizeof(frame)) & ~(uintptr_t)15) - 8;
	if (at < floor)
		return -E2BIG;
	mwi_sigframe_fill(&frame, resume, sigmask, fp);
	if ((ret = mwi_poke(t, fp, xs, fplen)) ||
	    (ret = mwi_poke(t, at, &frame, sizeof(frame))))
		return ret;
	*sp = at;
	*altstack = at + MWI_SIGFRAME_ALTSTACK;
	return 0;
}

/* glibc's __restore_rt is in libc itself */
int mwi_arch_sigreturn_extra(pid_t pid, uintptr_t *addr)
{
	(void)pid, (void)addr;
	return -ENOENT;
}
