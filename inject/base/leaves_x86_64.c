/* SPDX-License-Identifier: MIT */
/* leaves_x86_64.c - leaves.h for x86-64: the list, and spans that are
 * the entry alone. */
#include "base/leaves.h"

#include <stddef.h>

/* x86-64 glibc writes these as leaves in assembly that never moves rsp
 * (checked by hand on Debian 12's glibc 2.36 for the AVX-512/EVEX
 * variants picked here: no push, call or rsp operand in them or in the
 * code they jump to; the _chk ones may jump to __chk_fail, which aborts
 * anyway). */
const char *const mwi_leaf_names[] = {
	MWI_LEAF_NAMES_COMMON,
	"mempcpy", "strncpy", "stpncpy", "strcat", "strncat", "wcsnlen",
	"wcscpy", "rawmemchr",
	"__memcpy_chk", "__memmove_chk", "__mempcpy_chk", "__memset_chk",
	"__wmemset_chk",
};
const size_t mwi_leaf_count = sizeof(mwi_leaf_names) /
			      sizeof(mwi_leaf_names[0]);

/* A thread in a leaf is judged by its return address (arch_x86_64.c's
 * mwi_arch_in_called_leaf), not by where in the leaf it is. */
int mwi_leaf_span(uintptr_t at, uintptr_t lo_x, uintptr_t hi_x,
		  uintptr_t *lo, uintptr_t *hi)
{
	(void)lo_x, (void)hi_x;
	*lo = at;
	*hi = at + 1;
	return 0;
}
