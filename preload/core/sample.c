/* SPDX-License-Identifier: MIT */
/* sample.c - see sample.h */
#include "core/sample.h"
#include "common/clock.h"

#include <string.h>
#include <time.h>

/* Written before tracking is enabled (constructor or helper), published
 * by mw_track_enable's release store; read-only while tracking. */
uint64_t mw_sample_bytes;
/* As mw_sample_bytes. */
uint64_t mw_stack_sample_bytes;
/* Counting filter: relaxed atomic adds by hooks, zeroed at reset. */
uint8_t mw_sample_filter[1u << 15];

/* xorshift64*, per thread (seeded from the clock and the TLS address). */
static uint64_t next_random(void)
{
	uint64_t x = mw_tls.rng;

	if (!x)
		x = mw_monotonic_ns() ^ ((uint64_t)(uintptr_t)&mw_tls << 16) ^
		    0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	mw_tls.rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Natural logarithm of x in (0, 1], to ~1e-4: no libm in a hook. */
static double ln(double x)
{
	uint64_t bits;
	int e;
	double m, t, t2;

	memcpy(&bits, &x, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & ((1ull << 52) - 1)) | (1023ull << 52);
	memcpy(&m, &bits, sizeof(m));		/* m in [1, 2) */
	t = (m - 1) / (m + 1);			/* ln m = 2 atanh t */
	t2 = t * t;
	return e * 0.6931471805599453 +
	       2 * t * (1 + t2 * (1.0 / 3 + t2 * (1.0 / 5 + t2 * (1.0 / 7))));
}

/* e^-x for x >= 0, to ~1e-6 relative. */
static double exp_neg(double x)
{
	double r = 1, term = 1;
	int k, halvings = 0;

	while (x > 0.5) {		/* e^-x = (e^-x/2)^2 */
		x /= 2;
		halvings++;
	}
	for (k = 1; k < 12; k++) {
		term *= -x / k;
		r += term;
	}
	while (halvings--)
		r *= r;
	return r;
}

int mw_sample_draw_slow(int64_t *left, uint64_t mean)
{
	/* U in (0, 1]; the interval is exponential with mean S */
	double u = ((next_random() >> 11) + 1) * (1.0 / 9007199254740992.0);
	double interval = -ln(u) * (double)mean;

	*left = interval < 1 ? 1 : (int64_t)interval;
	return 1;
}

uint64_t mw_sample_weight_of(uint64_t size, uint64_t mean)
{
	double p;

	if (!mean)
		return 1024;
	p = 1 - exp_neg((double)size / (double)mean);
	if (p < 1e-9)
		p = 1e-9;
	return (uint64_t)(1024.0 / p + 0.5);
}

void mw_sample_mark(uintptr_t ptr, int delta)
{
	uint8_t *c = &mw_sample_filter[mw_sample_slot(ptr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	/* a saturated counter stays saturated: never a false negative */
	do {
		if (v == UINT8_MAX)
			return;
	} while (!__atomic_compare_exchange_n(c, &v, (uint8_t)(v + delta), 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

void mw_sample_clear(void)
{
	memset(mw_sample_filter, 0, sizeof(mw_sample_filter));
}
