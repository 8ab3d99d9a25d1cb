/* SPDX-License-Identifier: MIT */
/* leaves_aarch64.c - leaves.h for aarch64: the list, and spans found by
 * walking each one's code (mwi_leaf_walk_a64). */
#include "base/leaves.h"

#include <stddef.h>

/* The code each name resolves to is walked, by tests/c/test_leaves.c and
 * by the injector at every read of the maps, which keeps only leaves.
 * Left out, for what the walk found on Debian 12's glibc 2.36:
 * - mempcpy, strncpy, stpncpy, strcat, strncat, wcsnlen, wcscpy: C that
 *   calls memcpy, strlen, strnlen, wmemcpy or wcsnlen, its first
 *   instruction stp x29, x30, [sp, #-N]!;
 * - rawmemchr(s, c): tail-calls memchr or strlen, ifuncs, through libc's
 *   own PLT (br x17);
 * - __memcpy_chk, __memmove_chk, __mempcpy_chk, __memset_chk,
 *   __wmemset_chk: C; the check passed, they call __chk_fail (stp x29,
 *   x30 first) or tail-call the routine through the PLT. */
const char *const mwi_leaf_names[] = {
	MWI_LEAF_NAMES_COMMON,
};
const size_t mwi_leaf_count = sizeof(mwi_leaf_names) /
			      sizeof(mwi_leaf_names[0]);

int mwi_leaf_span(uintptr_t at, uintptr_t lo_x, uintptr_t hi_x,
		  uintptr_t *lo, uintptr_t *hi)
{
	struct mwi_leaf_walk w;
	int ret = mwi_leaf_walk_a64(at, lo_x, hi_x, &w);

	if (ret)
		return ret;
	*lo = w.lo;
	*hi = w.hi;
	return 0;
}
