/* SPDX-License-Identifier: MIT */
/* tap.h - a minimal Test Anything Protocol helper for C unit tests. */
#ifndef MW_TAP_H
#define MW_TAP_H

#include <stdio.h>

static int tap_n, tap_failed;

#define ok(cond, ...)                                                   \
	do {                                                            \
		int ok_ = !!(cond);                                     \
		printf("%s %d - ", ok_ ? "ok" : "not ok", ++tap_n);     \
		printf(__VA_ARGS__);                                    \
		printf("\n");                                           \
		if (!ok_) {                                             \
			tap_failed++;                                   \
			printf("#   failed at %s:%d: %s\n", __FILE__,   \
			       __LINE__, #cond);                        \
		}                                                       \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	if (tap_failed)
		printf("# %d of %d failed\n", tap_failed, tap_n);
	return tap_failed ? 1 : 0;
}

#endif
