/* SPDX-License-Identifier: MIT */
/* jit.h - the JIT compiler's own allocations (YJIT, ZJIT): made by native
 * code inside the JIT's text in libruby, they are a site of their own
 * ("YJIT compiler", "ZJIT compiler"), never charged to the Ruby line that
 * was running while the JIT compiled it.
 *
 * The JIT's text is two ranges of libruby's: its Rust code (the JIT
 * crates and the Rust runtime linked in with them), and the cold part of
 * that code the linker puts apart, among C's cold functions (Vec's
 * growth path, panics: 80 to 138 functions on 3.2 to 4.1), found once
 * from libruby's symbols (report/jitsyms.c) before tracking is enabled.
 * On Ruby 4.1 (rustc 1.85) the cold growth path calls malloc and realloc
 * itself: without its range, ZJIT's compiling put 750 allocations on
 * the Ruby line it compiled.  A hook checks its caller's address against
 * both: two subtractions and two comparisons.
 */
#ifndef MW_JIT_H
#define MW_JIT_H

#include <stdint.h>

#include "core/sites.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* One range of the JIT's text: [start, start + len), len 0 when none. */
struct mw_jit_range {
	uintptr_t start, len;
};

/* The JIT's text: [0] its Rust code, [1] the cold part apart.  Plain:
 * set by mw_jit_set before tracking is enabled, read by hooks after its
 * release store. */
extern struct mw_jit_range mw_jit_text[2];

/* Whether a native caller at @caller is the JIT's own code.
 * Context: any; pure, four loads (one cache line). */
static inline int mw_jit_caller(uintptr_t caller)
{
	return caller - mw_jit_text[0].start < mw_jit_text[0].len ||
	       caller - mw_jit_text[1].start < mw_jit_text[1].len;
}

/* The JIT's site (keyed by the start of its main range, which no other
 * caller has).  Returns NULL when the table cannot take it.
 * Context: as mw_site_for_addr. */
struct mw_site *mw_jit_site(void);

/* What the JIT in the ranges is: which crates its symbols name. */
enum { MW_JIT_YJIT = 1, MW_JIT_ZJIT = 2 };

/* Records the JIT's text (@text[0] its main range, @text[1] the cold
 * one, len 0 when none), its crates (MW_JIT_* bits) and where libruby
 * keeps whether each is on (NULL: unknown): YJIT's bool
 * rb_yjit_enabled_p, ZJIT's entry pointer rb_zjit_entry (non-NULL: on).
 * Context: not a hook; before tracking is enabled (preload, attach). */
void mw_jit_set(const struct mw_jit_range text[2], unsigned crates,
		const volatile unsigned char *yjit_on,
		void *const volatile *zjit_entry);

/* The name of the JIT's site when @s is it ("YJIT compiler", "ZJIT
 * compiler", "JIT compiler" when which one is on cannot be told), else
 * NULL.  Context: any; never allocates. */
const char *mw_jit_name(const struct mw_site *s);

#pragma GCC visibility pop

#endif
