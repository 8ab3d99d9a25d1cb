/* SPDX-License-Identifier: MIT */
/* trampoline_aarch64.c - where calls made by the injector return to
 * (aarch64; trampoline_x86_64.c tells the whole story).
 *
 * The injector sets x30 to mw_return_trampoline and sp to a signal frame
 * of its own; the trampoline stores x0 in mw_call_result and executes
 * rt_sigreturn on that frame, which restores the thread (x1 and x8, used
 * here, included), whether or not the injector is still alive.
 */
#include "base/export.h"
#include "inject_abi.h"

#define STR_(x) #x
#define STR(x) STR_(x)

EXPORT long mw_call_result;
extern long mw_call_result_local
	__attribute__((alias("mw_call_result"), visibility("hidden")));

/* MW_TRAMPOLINE_STOP (16) bytes: adrp x1 and str x0 (the result); mov
 * x8, #139 (__NR_rt_sigreturn); svc #0.  At the syscall's entry stop the
 * pc is just past the svc; the assembler checks that the two agree. */
__asm__(".text\n"
	".p2align 2\n"
	".globl mw_return_trampoline\n"
	".type mw_return_trampoline, %function\n"
	"mw_return_trampoline:\n"
	"\tadrp x1, mw_call_result_local\n"
	"\tstr x0, [x1, #:lo12:mw_call_result_local]\n"
	"\tmov x8, #139\n"
	"\tsvc #0\n"
	"\t.if . - mw_return_trampoline - " STR(MW_TRAMPOLINE_STOP) "\n"
	"\t.error \"MW_TRAMPOLINE_STOP is not where the syscall ends\"\n"
	"\t.endif\n"
	"\tbrk #0\n"
	".size mw_return_trampoline, . - mw_return_trampoline\n");
