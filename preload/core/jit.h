/* SPDX-License-Identifier: MIT */
/* jit.h - the JIT compiler's own allocations (YJIT, ZJIT): made by native
 * code inside the JIT's text in libruby, they are a site of their own
 * ("YJIT compiler", "ZJIT compiler"), never charged to the Ruby line that
 * was running while the JIT compiled it.
 *
 * The JIT's text is one range of libruby's: the Rust code (the JIT crates
 * and the Rust runtime linked in with them), found once from libruby's
 * symbols (report/jitsyms.c) before tracking is enabled.  A hook checks
 * its caller's address against it: one subtraction and one comparison.
 */
#ifndef MW_JIT_H
#define MW_JIT_H

#include <stdint.h>

#include "core/sites.h"

/* [mw_jit_start, mw_jit_start + mw_jit_len): the JIT's text; len 0 when
 * there is none.  Plain: set by mw_jit_set before tracking is enabled,
 * read by hooks after its release store. */
extern uintptr_t mw_jit_start, mw_jit_len;

/* Whether a native caller at @caller is the JIT's own code.
 * Context: any; pure, two loads. */
static inline int mw_jit_caller(uintptr_t caller)
{
	return caller - mw_jit_start < mw_jit_len;
}

/* The JIT's site (keyed by the range's start, which no other caller has).
 * Returns NULL when the table cannot take it.
 * Context: as mw_site_for_addr. */
struct mw_site *mw_jit_site(void);

/* What the JIT in the range is: which crates its symbols name. */
enum { MW_JIT_YJIT = 1, MW_JIT_ZJIT = 2 };

/* Records the JIT's text range, its crates (MW_JIT_* bits) and where
 * libruby keeps whether each is on (NULL: unknown): YJIT's bool
 * rb_yjit_enabled_p, ZJIT's entry pointer rb_zjit_entry (non-NULL: on).
 * Context: not a hook; before tracking is enabled (preload, attach). */
void mw_jit_set(uintptr_t start, uintptr_t len, unsigned crates,
		const volatile unsigned char *yjit_on,
		void *const volatile *zjit_entry);

/* The name of the JIT's site when @s is it ("YJIT compiler", "ZJIT
 * compiler", "JIT compiler" when which one is on cannot be told), else
 * NULL.  Context: any; never allocates. */
const char *mw_jit_name(const struct mw_site *s);

#endif
