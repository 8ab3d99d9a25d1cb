/* SPDX-License-Identifier: MIT */
/* sigframe_x86_64.h - the x86-64 kernel's signal frame, as rt_sigreturn reads
 * it at rsp - 8: what a guarded call (ptrace.c) returns through.
 * Copied from the kernel's arch/x86/include/asm/sigframe.h and uapi
 * asm/sigcontext.h, asm/ucontext.h; sigframe_x86_64.c checks each offset the
 * kernel reads against the number there.  Built on x86-64 only (arch.h). */
#ifndef MWI_SIGFRAME_H
#define MWI_SIGFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

struct mwi_sigcontext {		/* struct sigcontext, 64-bit */
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;	/* address of the xsave area */
	uint64_t reserved1[8];
};

struct mwi_stack {		/* stack_t */
	uint64_t ss_sp;
	int32_t ss_flags;	/* SS_ONSTACK 1, SS_DISABLE 2 */
	uint64_t ss_size;
};

struct mwi_ucontext {		/* struct ucontext */
	uint64_t uc_flags;
	uint64_t uc_link;
	struct mwi_stack uc_stack;
	struct mwi_sigcontext uc_mcontext;
	uint64_t uc_sigmask;	/* the kernel's sigset_t: 64 bits */
};

struct mwi_rt_sigframe {	/* struct rt_sigframe */
	uint64_t pretcode;	/* the handler's return address */
	struct mwi_ucontext uc;
	unsigned char info[128];	/* siginfo_t: rt_sigreturn ignores it */
};

/* The software bytes at offset 464 of a signal frame's xsave area (in
 * its legacy area's unused part): they tell rt_sigreturn what the area
 * holds.  struct _fpx_sw_bytes. */
struct mwi_fpx_sw_bytes {
	uint32_t magic1;	/* FP_XSTATE_MAGIC1 */
	uint32_t extended_size;	/* the area + FP_XSTATE_MAGIC2 after it */
	uint64_t xfeatures;
	uint32_t xstate_size;
	uint32_t padding[7];
};

#define MWI_FPX_SW_OFFSET 464
/* legacy area + xsave header: the smallest xsave area there is */
#define MWI_XSAVE_MIN 576
/* FP_XSTATE_MAGIC2, after the area */
#define MWI_XSTATE_TRAILER 4

/* The xsave header's XSTATE_BV: the components not in their init state */
#define MWI_XSTATE_BV_OFFSET 512

/* How much of @xs (@len bytes of PTRACE_GETREGSET NT_X86_XSTATE) a
 * signal frame holds: up to the end of the last component in use, as
 * CPUID leaf 0xd places them.  ptrace gives the size of every feature
 * the CPU has (AMX's 8 KiB of tiles included), but rt_sigreturn takes
 * an area no larger than the thread's own frame, which leaves out tiles
 * it has no permission for; a larger one is restored as the legacy
 * area alone, zeroing the AVX registers under the interrupted code.
 * Clears from *@xfeatures the components that do not fit (in their
 * init state: the thread has not used them).
 * Context: any (x86-64 only: CPUID). */
size_t mwi_xstate_frame_len(const unsigned char *xs, size_t len,
			    uint64_t *xfeatures);

/* Makes @xs, @len bytes of PTRACE_GETREGSET NT_X86_XSTATE, the fpstate
 * of a signal frame: ptrace keeps XCR0 where the frame keeps its
 * software bytes, the area is cut to mwi_xstate_frame_len, and it ends
 * with FP_XSTATE_MAGIC2 (@xs needs MWI_XSTATE_TRAILER bytes of room
 * after @len).  Returns the bytes to write: the cut length +
 * MWI_XSTATE_TRAILER.
 * Context: any; @len >= MWI_XSAVE_MIN. */
size_t mwi_sigframe_fpstate(unsigned char *xs, size_t len);

/* Fills @f so that rt_sigreturn on it restores @r (already in the form
 * to resume from: see mwi_arch_restartable() in arch.h), @sigmask and the
 * fpstate at @fpstate (an address in the target).  The sigaltstack
 * field reads SS_DISABLE until the thread fills it in.
 * Context: any. */
void mwi_sigframe_fill(struct mwi_rt_sigframe *f,
		       const struct user_regs_struct *r, uint64_t sigmask,
		       uint64_t fpstate);

#define MWI_SIGFRAME_ALTSTACK offsetof(struct mwi_rt_sigframe, uc.uc_stack)

#endif
