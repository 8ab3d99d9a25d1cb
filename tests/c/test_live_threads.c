/* SPDX-License-Identifier: MIT */
/* Unit test of the live table (preload/core/live.c) under threads:
 * several threads inserting and removing at once in shared regions
 * (shared shards and locks, growth under contention) while a reader
 * walks the table; every entry and every unknown remove is accounted
 * for exactly.  The single-threaded contracts are test_live.c's. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "live_fixture.h"
#include "tap.h"

/* Threads inserting and removing at once, in shared regions (shared
 * shards and locks, growth under contention), with a reader walking the
 * table meanwhile. */
enum { NT = 4, PER = 30000, KEEP = 1000, UNK = 2000 };
static uintptr_t mt_base, mt_unknown_base;
static int mt_stop;

struct worker {
	int t;
	int bad;
	uint64_t unknown_bytes;
};

static uintptr_t mt_ptr(int t, int i)
{
	/* interleaved: neighbouring pointers belong to different threads */
	return mt_base + 16 * ((uintptr_t)i * NT + (uintptr_t)t);
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	uint32_t site = 70 + (uint32_t)w->t;
	struct mw_live_entry out;
	int i, j;

	/* in rounds, so that inserts and removes of all threads overlap */
	for (i = 0; i < PER; i += 1000) {
		for (j = i; j < i + 1000; j++)
			w->bad += insert(mt_ptr(w->t, j), site, (uint64_t)j) != 0;
		for (j = i; j < i + 1000; j += 2)
			if (j >= KEEP)
				w->bad += mw_live_remove(mt_ptr(w->t, j), &out) != 1 ||
					  mw_live_site(&out) != site ||
					  mw_live_size(&out) != (uint64_t)j;
	}
	for (j = 1; j < PER; j += 2)
		if (j >= KEEP)
			w->bad += mw_live_remove(mt_ptr(w->t, j), &out) != 1 ||
				  mw_live_site(&out) != site ||
				  mw_live_size(&out) != (uint64_t)j;
	for (j = 0; j < UNK; j++) {
		uintptr_t p = mt_unknown_base + 16 * ((uintptr_t)j * NT +
						      (uintptr_t)w->t);

		w->bad += mw_live_remove(p, &out) != 0;
		w->unknown_bytes += usable_of(p);
	}
	return NULL;
}

static void count_fn(const struct mw_live_entry *e, void *arg)
{
	(void)e;
	++*(uint64_t *)arg;
}

static void *reader(void *arg)
{
	uint64_t *walks = arg;

	while (!__atomic_load_n(&mt_stop, __ATOMIC_ACQUIRE)) {
		uint64_t n = 0;

		mw_live_each(0, count_fn, &n);
		(void)mw_live_count();
		++*walks;
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[NT], rd;
	struct worker w[NT];
	uint64_t count0, u0, b0, ub = 0, walks = 0;
	int t, bad = 0, r;

	mw_live_clear(0);
	count0 = mw_live_count();
	u0 = mw_live_unknown();
	b0 = mw_live_unknown_bytes();
	/* PER * NT pointers over 2 regions, the unknowns over one more */
	mt_base = region(1);
	region(1);
	mt_unknown_base = region(0);
	mt_stop = 0;
	r = pthread_create(&rd, NULL, reader, &walks);
	for (t = 0; t < NT; t++) {
		w[t] = (struct worker){ .t = t };
		r |= pthread_create(&th[t], NULL, worker, &w[t]);
	}
	for (t = 0; t < NT; t++) {
		pthread_join(th[t], NULL);
		bad += w[t].bad;
		ub += w[t].unknown_bytes;
	}
	__atomic_store_n(&mt_stop, 1, __ATOMIC_RELEASE);
	pthread_join(rd, NULL);
	ok(r == 0, "%d threads and a reader started", NT);
	ok(bad == 0, "every thread got back its own entries (%d mismatches)", bad);
	ok(mw_live_count() == count0 + (uint64_t)NT * KEEP,
	   "count: the %d entries each thread kept", KEEP);
	for (t = 0; t < NT; t++)
		bad += census(70 + (uint32_t)t).n != KEEP;
	ok(bad == 0, "each thread's site holds exactly its kept entries");
	ok(mw_live_unknown() == u0 + (uint64_t)NT * UNK &&
		   mw_live_unknown_bytes() == b0 + ub,
	   "unknown removes from all threads add up (%d, bytes exact)", NT * UNK);
	mw_live_clear(0);
}

int main(void)
{
	mw_real.malloc_usable_size = fake_usable_size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_threads();
	return tap_done();
}
