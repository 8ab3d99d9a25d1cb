/* SPDX-License-Identifier: MIT */
/* sigframe_x86_64.c - see sigframe_x86_64.h */
#include "process/sigframe_x86_64.h"
#include "common/libc.h"

#include <cpuid.h>
#include <signal.h>
#include <string.h>

/* The kernel's offsets, from the frame's start (rsp - 8) */
#define AT(member, off) \
	_Static_assert(offsetof(struct mwi_rt_sigframe, member) == (off), \
		       "rt_sigframe." #member " is at " #off)
AT(uc.uc_flags, 8);
AT(uc.uc_stack, 24);
AT(uc.uc_mcontext, 48);
AT(uc.uc_mcontext.rip, 48 + 128);
AT(uc.uc_mcontext.cs, 48 + 144);
AT(uc.uc_mcontext.fpstate, 48 + 184);
AT(uc.uc_sigmask, 304);
AT(info, 312);
#undef AT
_Static_assert(sizeof(struct mwi_stack) == 24, "stack_t is 24 bytes");
_Static_assert(sizeof(struct mwi_sigcontext) == 256, "sigcontext: 256");
_Static_assert(sizeof(struct mwi_rt_sigframe) == 440, "rt_sigframe: 440");
_Static_assert(offsetof(struct mwi_fpx_sw_bytes, xstate_size) == 16 &&
	       sizeof(struct mwi_fpx_sw_bytes) == 48, "_fpx_sw_bytes");

/* uc_flags: UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS */
#define UC_FLAGS 0x7

/* Where xsave component @i ends in the standard (uncompacted) format of
 * this CPU, or 0 when the CPU has no such component. */
static size_t component_end(unsigned i)
{
	unsigned size, offset, ecx, edx;

	if (!__get_cpuid_count(0xd, i, &size, &offset, &ecx, &edx) || !size)
		return 0;
	return (size_t)offset + size;
}

size_t mwi_xstate_frame_len(const unsigned char *xs, size_t len,
			    uint64_t *xfeatures)
{
	uint64_t bv, keep = 3;	/* x87 and SSE live in the legacy area */
	size_t need = MWI_XSAVE_MIN, end;
	unsigned i;

	memcpy(&bv, xs + MWI_XSTATE_BV_OFFSET, sizeof(bv));
	for (i = 2; i < 64; i++) {
		if (!(bv >> i & 1))
			continue;
		end = component_end(i);
		if (end > need)
			need = end;
	}
	if (need > len)
		need = len;
	for (i = 2; i < 64; i++) {
		end = component_end(i);
		if (end && end <= need)
			keep |= (uint64_t)1 << i;
	}
	*xfeatures &= keep;
	return need;
}

size_t mwi_sigframe_fpstate(unsigned char *xs, size_t len)
{
	struct mwi_fpx_sw_bytes sw;
	uint32_t magic2 = FP_XSTATE_MAGIC2;

	memset(&sw, 0, sizeof(sw));
	sw.magic1 = FP_XSTATE_MAGIC1;
	/* ptrace's copy holds XCR0 in the place of xfeatures */
	memcpy(&sw.xfeatures, xs + MWI_FPX_SW_OFFSET, sizeof(sw.xfeatures));
	len = mwi_xstate_frame_len(xs, len, &sw.xfeatures);
	sw.extended_size = (uint32_t)(len + MWI_XSTATE_TRAILER);
	sw.xstate_size = (uint32_t)len;
	memcpy(xs + MWI_FPX_SW_OFFSET, &sw, sizeof(sw));
	memcpy(xs + len, &magic2, MWI_XSTATE_TRAILER);
	return len + MWI_XSTATE_TRAILER;
}

void mwi_sigframe_fill(struct mwi_rt_sigframe *f,
		       const struct user_regs_struct *r, uint64_t sigmask,
		       uint64_t fpstate)
{
	struct mwi_sigcontext *sc = &f->uc.uc_mcontext;

	memset(f, 0, sizeof(*f));
	f->uc.uc_flags = UC_FLAGS;
	f->uc.uc_stack.ss_flags = SS_DISABLE;
	sc->r8 = r->r8;
	sc->r9 = r->r9;
	sc->r10 = r->r10;
	sc->r11 = r->r11;
	sc->r12 = r->r12;
	sc->r13 = r->r13;
	sc->r14 = r->r14;
	sc->r15 = r->r15;
	sc->rdi = r->rdi;
	sc->rsi = r->rsi;
	sc->rbp = r->rbp;
	sc->rbx = r->rbx;
	sc->rdx = r->rdx;
	sc->rax = r->rax;
	sc->rcx = r->rcx;
	sc->rsp = r->rsp;
	sc->rip = r->rip;
	sc->eflags = r->eflags;
	sc->cs = (uint16_t)r->cs;
	sc->gs = (uint16_t)r->gs;
	sc->fs = (uint16_t)r->fs;
	sc->ss = (uint16_t)r->ss;
	sc->fpstate = fpstate;
	f->uc.uc_sigmask = sigmask;
}
