/* SPDX-License-Identifier: MIT */
/* counts.c - see counts.h */
#define _GNU_SOURCE
#include "core/counts.h"
#include "base/spin.h"

#include <string.h>
#include <sys/mman.h>

/* Room for this many hot sites (512 bytes each): far more call sites
 * than any one process keeps busy.  Mapped a chunk at a time as sites
 * turn hot, so that an attach under a tight address-space limit does
 * not spend 8 MiB on stripes it may never use. */
#define HOT_MAX 16384u
#define CHUNK_STRIPES 512u	/* 256 KiB */

/* chunks[i]: mapped under chunk_lock, published with a release store,
 * never unmapped.  pool_used: stripes handed out, atomic. */
static struct mw_stripes *chunks[HOT_MAX / CHUNK_STRIPES];
static int chunk_lock;		/* serialises the mapping of a chunk */
static unsigned pool_used;

int mw_counts_init(void)
{
	return 0;
}

/* The chunk holding stripe set @i, mapped on first use; NULL when it
 * cannot be (the site then keeps its one set). */
static struct mw_stripes *chunk_of(unsigned i)
{
	struct mw_stripes **slot = &chunks[i / CHUNK_STRIPES];
	struct mw_stripes *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	void *m;

	if (c)
		return c;
	mw_spin_lock(&chunk_lock);
	c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!c) {
		m = mmap(NULL, CHUNK_STRIPES * sizeof(struct mw_stripes),
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (m != MAP_FAILED) {
			c = m;
			__atomic_store_n(slot, c, __ATOMIC_RELEASE);
		}
	}
	mw_spin_unlock(&chunk_lock);
	return c;
}

void mw_counts_number_thread(void)
{
	static unsigned next;

	mw_tls.stripe = 1 + __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) %
				    MW_STRIPES;
}

void mw_counts_make_hot(struct mw_site_counts *c)
{
	struct mw_stripes *none = NULL, *chunk;
	unsigned i;

	if (__atomic_load_n(&pool_used, __ATOMIC_RELAXED) >= HOT_MAX)
		return;
	i = __atomic_fetch_add(&pool_used, 1, __ATOMIC_RELAXED);
	if (i >= HOT_MAX)
		return;		/* lost a race for the last ones */
	chunk = chunk_of(i);
	if (!chunk)
		return;
	/* fresh chunk memory is zero; only one caller sees the crossing,
	 * but after a reset a site may cross again: keep the first stripes */
	__atomic_compare_exchange_n(&c->stripes, &none,
				    &chunk[i % CHUNK_STRIPES], 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

static void add(struct mw_counts *out, const struct mw_counts *c)
{
	uint64_t max = __atomic_load_n(&c->max_lifespan, __ATOMIC_RELAXED);

	out->total += __atomic_load_n(&c->total, __ATOMIC_RELAXED);
	out->allocations += __atomic_load_n(&c->allocations, __ATOMIC_RELAXED);
	out->frees += __atomic_load_n(&c->frees, __ATOMIC_RELAXED);
	out->freed_bytes += __atomic_load_n(&c->freed_bytes, __ATOMIC_RELAXED);
	out->age_total += __atomic_load_n(&c->age_total, __ATOMIC_RELAXED);
	if (max > out->max_lifespan)
		out->max_lifespan = max;
}

void mw_counts_read(const struct mw_site_counts *c, struct mw_counts *out)
{
	struct mw_stripes *st = __atomic_load_n(&c->stripes, __ATOMIC_ACQUIRE);
	unsigned i;

	memset(out, 0, sizeof(*out));
	add(out, &c->base);
	for (i = 0; st && i < MW_STRIPES; i++)
		add(out, &st->line[i].c);
}

static void zero(struct mw_counts *c)
{
	__atomic_store_n(&c->total, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->allocations, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->frees, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->freed_bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->age_total, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->max_lifespan, 0, __ATOMIC_RELAXED);
}

void mw_counts_zero(struct mw_site_counts *c)
{
	struct mw_stripes *st = __atomic_load_n(&c->stripes, __ATOMIC_ACQUIRE);
	unsigned i;

	zero(&c->base);
	for (i = 0; st && i < MW_STRIPES; i++)
		zero(&st->line[i].c);
}

uint64_t mw_counts_memory(void)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < HOT_MAX / CHUNK_STRIPES; i++)
		if (__atomic_load_n(&chunks[i], __ATOMIC_RELAXED))
			n += CHUNK_STRIPES * sizeof(struct mw_stripes);
	return n;
}
