/* SPDX-License-Identifier: MIT */
/* clock.h - the monotonic clock, for timeouts, rates and windows.
 * Shared by the injector and the library. */
#ifndef MW_CLOCK_H
#define MW_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds of CLOCK_MONOTONIC.  Context: any (vDSO; a syscall where
 * there is none); async-signal-safe. */
static inline uint64_t mw_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mw_monotonic_ms(void)
{
	return mw_monotonic_ns() / 1000000u;
}

#endif
