/* SPDX-License-Identifier: MIT */
/* inject_abi.h - the contract between inject/ (mwrap-inject, and the
 * front end through it) and the library it loads into a live process.
 * Both sides include this file; nothing here may change without both.
 *
 * The injector dlopen()s the library, finds these symbols in its ELF
 * dynamic symbol table (never by calling into the target), and calls
 * MW_ABI_ATTACH(options) with its return address set to
 * MW_ABI_TRAMPOLINE, so that the call ends in a known place even if the
 * injector has died meanwhile. */
#ifndef MW_INJECT_ABI_H
#define MW_INJECT_ABI_H

#include <errno.h>

/* int mw_attach(const char *options): starts tracing a live process.
 * Context: any thread of the target, called by the injector at a safe
 * point; returns 0 or one of the negative results below. */
#define MW_ABI_ATTACH		"mw_attach"
/* int mw_detach(void): stops tracing and undoes every patch.
 * Context: any thread but the helper; waits up to 5 s. */
#define MW_ABI_DETACH		"mw_detach"
/* The return address of injected calls: stores the return register
 * (%rax, x0) in MW_ABI_RESULT, then rt_sigreturn()s on the frame the
 * injector built (hook/trampoline_ARCH.c). */
#define MW_ABI_TRAMPOLINE	"mw_return_trampoline"
/* long: where the trampoline leaves the call's result. */
#define MW_ABI_RESULT		"mw_call_result"
/* Bytes from MW_ABI_TRAMPOLINE to the instruction after its syscall:
 * the injector's syscall-exit stop there means the call is over.  Each
 * trampoline_ARCH.c's assembler checks its own. */
#if defined(__aarch64__)
#define MW_TRAMPOLINE_STOP	16
#else
#define MW_TRAMPOLINE_STOP	14
#endif

/* mw_attach's results other than 0 and other -errno values */
#define MW_ATTACH_ALREADY	(-EALREADY)	/* attached before: -114 */
#define MW_ATTACH_PRELOADED	(-EBUSY)	/* runs under LD_PRELOAD: -16 */
#define MW_ATTACH_NOT_READY	(-ENOENT)	/* real functions not found */

/* Context: as MW_ABI_ATTACH above. */
int mw_attach(const char *options);
/* Context: as MW_ABI_DETACH above. */
int mw_detach(void);

#endif
