/* SPDX-License-Identifier: MIT */
/* trampoline_x86_64.c - where calls made by the injector return to
 * (x86-64; trampoline_aarch64.c is the same for aarch64).
 *
 * mwrap-inject calls functions of ours in a thread it has hijacked.
 * Their return address is mw_return_trampoline, which stores the result
 * in mw_call_result and executes rt_sigreturn on a signal frame the
 * injector left on the thread's stack, holding the thread's state from
 * before the hijack.  While the injector lives, it takes over at that
 * rt_sigreturn and restores the thread itself; if it was killed
 * meanwhile (even by SIGKILL), the thread restores itself from the
 * frame and carries on as if nothing had happened.
 */
#include "base/export.h"
#include "inject_abi.h"

#define STR_(x) #x
#define STR(x) STR_(x)

EXPORT long mw_call_result;
extern long mw_call_result_local
	__attribute__((alias("mw_call_result"), visibility("hidden")));

/* MW_TRAMPOLINE_STOP (14) bytes: mov %rax,mw_call_result(%rip) (7);
 * mov $15,%eax (5); syscall (2).  The injector stops at the syscall's
 * entry, so it knows the address just past it; the assembler checks
 * that the two agree. */
__asm__(".text\n"
	".globl mw_return_trampoline\n"
	".type mw_return_trampoline, @function\n"
	"mw_return_trampoline:\n"
	"\tmovq %rax, mw_call_result_local(%rip)\n"
	"\tmovl $15, %eax\n"	/* __NR_rt_sigreturn */
	"\tsyscall\n"
	"\t.if . - mw_return_trampoline - " STR(MW_TRAMPOLINE_STOP) "\n"
	"\t.error \"MW_TRAMPOLINE_STOP is not where the syscall ends\"\n"
	"\t.endif\n"
	"\thlt\n"
	".size mw_return_trampoline, . - mw_return_trampoline\n");
