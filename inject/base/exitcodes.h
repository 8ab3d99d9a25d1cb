/* SPDX-License-Identifier: MIT */
/* exitcodes.h - mwrap-inject's exit codes, one per failure class.
 * Both backends (inject.c's sequence, gdb.c) return them; the front end
 * reads them by name from `mwrap-inject --exit-codes`, so a number lives
 * only here. */
#ifndef MWI_EXITCODES_H
#define MWI_EXITCODES_H

/* X(NAME, number, what it means) */
#define MWI_EXIT_CODES(X)						\
	X(OK,       0, "done")						\
	X(USAGE,    2, "usage")						\
	X(NOPROC,   3, "no such process")				\
	X(PERM,     4, "ptrace refused")				\
	X(NOSAFE,   5, "no safe point in time")				\
	X(LOAD,     6, "dlopen failed")					\
	X(SYMBOL,   7, "FUNCTION not found")				\
	X(GONE,     8, "target exited meanwhile")			\
	X(TARGET,   9, "the target faulted in the call")		\
	X(SC_OK,    0, "--check-seccomp: safe")				\
	X(SC_REFUSE, 10, "--check-seccomp: refuse")			\
	X(SC_UNSURE, 11, "--check-seccomp: cannot be shown safe")	\
	X(LIBC,    12, "LIBRARY is built for another C library (glibc, musl)")

#define MWI_EXIT_ENUM(name, n, what) EX_##name = n,
enum { MWI_EXIT_CODES(MWI_EXIT_ENUM) };
#undef MWI_EXIT_ENUM

#endif
