/* SPDX-License-Identifier: MIT */
/* pagestats.c - see pagestats.h */
#include "core/pagestats.h"
#include "base/spin.h"

#include <math.h>	/* HUGE_VAL only: no libm in this library */
#include <string.h>

/* Lifespan statistics (Welford), protected by stat_lock. */
static int stat_lock;
static uint64_t allocated, freed, n;
static int64_t life_min = -1, life_max = -1;
static double mean, m2;

/* Square root by Newton's method (no libm). */
static double root(double x)
{
	double r = x > 1 ? x : 1;
	int i;

	if (x <= 0)
		return 0;
	for (i = 0; i < 60; i++)
		r = (r + x / r) / 2;
	return r;
}

void mw_pagestats_mapped(void)
{
	mw_spin_lock(&stat_lock);
	allocated++;
	mw_spin_unlock(&stat_lock);
}

void mw_pagestats_unmapped(int64_t life)
{
	double d;

	mw_spin_lock(&stat_lock);
	freed++;
	n++;
	d = (double)life - mean;
	mean += d / (double)n;
	m2 += d * ((double)life - mean);
	if (life_min < 0 || life < life_min)
		life_min = life;
	if (life > life_max)
		life_max = life;
	mw_spin_unlock(&stat_lock);
}

void mw_pagestats_read(struct mw_heap_pages *st)
{
	memset(st, 0, sizeof(*st));
	mw_spin_lock(&stat_lock);
	st->allocated_pages = allocated;
	st->freed_pages = freed;
	st->lifespan_min = life_min;
	st->lifespan_max = life_max;
	st->lifespan_mean = n ? mean : HUGE_VAL;
	st->lifespan_stddev = n > 1 ? root(m2 / (double)(n - 1)) : 0.0;
	mw_spin_unlock(&stat_lock);
}

void mw_pagestats_fork_lock(void)
{
	mw_spin_lock(&stat_lock);
}

void mw_pagestats_fork_unlock(void)
{
	mw_spin_unlock(&stat_lock);
}
