/* SPDX-License-Identifier: MIT */
/* leaves.h - libc's string routines a thread may be stopped in and still
 * be at a safe point (the list: leaves_ARCH.c), and the walk of aarch64
 * code that checks the variant libc picked for this CPU is a true leaf
 * (leaves.c: any CPU runs it, on aarch64 code).
 *
 * The names are resolved with dlsym in the injector's own process
 * (maps.c, find_leaves); tests/c/test_leaves.c walks what they resolve
 * to.  Context: any; nothing here allocates. */
#ifndef MWI_LEAVES_H
#define MWI_LEAVES_H

#include <stddef.h>
#include <stdint.h>

/* Routines that keep no lock and no state of their own: they read and
 * write only the memory they are given, never call malloc, stdio or the
 * loader, and call nothing else.  A thread inside one, called from
 * application code, is at a safe point: our calls can run on it and it
 * resumes mid-copy.  This is what makes a thread that lives in memcpy
 * (copying big strings) attachable without waiting for it to leave
 * libc.  Anything else in libc may hold a lock or half-updated state
 * (the malloc family, stdio, the loader, locale, atexit, ...).
 * These are leaves on every architecture we run on; leaves_ARCH.c adds
 * its own and says how it checked them. */
#define MWI_LEAF_NAMES_COMMON \
	"memcpy", "memmove", "memset", "memcmp", "bcmp", "memchr", \
	"memrchr", "strlen", "strnlen", "strchr", "strchrnul", "strrchr", \
	"strcmp", "strncmp", "strcpy", "stpcpy", "wmemset", "wmemcmp", \
	"wmemchr", "wcslen", "wcschr", "wcsrchr", "wcscmp", "wcsncmp"

/* This architecture's list (leaves_ARCH.c). */
extern const char *const mwi_leaf_names[];
extern const size_t mwi_leaf_count;

/* The code a leaf entered at @at (inside libc's executable mapping
 * [@lo_x, @hi_x) of this process) can run: [*@lo, *@hi).  0, or -errno
 * when the code there is no leaf after all (aarch64: the walk below
 * found an offence; x86-64: never, the span is the entry alone).
 * Context: the injector, on its own libc. */
int mwi_leaf_span(uintptr_t at, uintptr_t lo_x, uintptr_t hi_x,
		  uintptr_t *lo, uintptr_t *hi);

/* The most instructions a walk visits before it gives up. */
#define MWI_LEAF_WALK_MAX 4096

struct mwi_leaf_walk {
	uintptr_t lo, hi;	/* the code reached: [lo, hi) */
	int insns;		/* how many instructions that is */
	/* not a leaf: the first instruction found to break the rule */
	uintptr_t at;
	uint32_t insn;
	const char *why;	/* e.g. "calls (bl)" */
};

/* Walks the aarch64 code that a routine entered at @entry can reach in
 * this process: every direct branch (b, b.cond, cbz/cbnz, tbz/tbnz)
 * followed, a path ends at ret.  A leaf never calls (bl, blr), never
 * branches through a register (br), traps or makes a system call (svc,
 * hvc, brk, ...), never writes x30 or sp nor addresses memory through
 * them (so neither the return address nor the stack below sp is ever
 * its), and never leaves [@lo, @hi) (libc's executable mapping).
 * Returns 0 for a leaf (@w->lo, hi and insns set), -EINVAL otherwise
 * (@w->at, insn and why name the first offence), -E2BIG past
 * MWI_LEAF_WALK_MAX instructions.  The instructions are read from this
 * process's memory: @lo..@hi must be mapped readable.  Any CPU can run
 * it on aarch64 code (tests); the injector walks only on aarch64.
 * Context: any; ~48 KB of stack, no allocation. */
int mwi_leaf_walk_a64(uintptr_t entry, uintptr_t lo, uintptr_t hi,
		      struct mwi_leaf_walk *w);

#endif
