/* SPDX-License-Identifier: MIT */
/* held.c - see held.h */
#include "report/held.h"

#include <errno.h>
#include <sys/mman.h>

#include "core/live.h"
#include "core/sample.h"
#include "core/sites.h"
#include "core/track.h"
#include "report/gc.h"

struct walk {
	struct mw_held *held;
	uint64_t now;
};

static uint64_t age(const struct walk *w, const struct mw_live_entry *e)
{
	return (w->now - mw_live_birth(e)) & MW_BIRTH_MASK;
}

static void oldest(const struct mw_live_entry *e, void *arg)
{
	struct walk *w = arg;

	if (mw_site_get(mw_live_site(e)) && age(w, e) > w->held->max_age)
		w->held->max_age = age(w, e);
}

static void add(struct mw_held *h, uint32_t id, uint64_t bytes)
{
	if (id < h->nsites)
		h->bytes[id] += bytes;
}

/* As track.c counts a block: a sampled stack's block scaled at its
 * stack and exact at its line, a sampled block scaled, else exact. */
static void held_one(const struct mw_live_entry *e, void *arg)
{
	struct walk *w = arg;
	uint64_t size = mw_live_size(e);
	const struct mw_site *s;

	if (age(w, e) < w->held->min_age)
		return;		/* in flight */
	s = mw_site_get(mw_live_site(e));
	if (!s)
		return;		/* a marker (code, heap pages) */
	if (mw_stack_sample_bytes && s->line_id) {
		add(w->held, s->id, size * mw_sample_weight_of(
			size, mw_stack_sample_bytes) / 1024);
		add(w->held, s->line_id, size);
	} else if (mw_sample_bytes) {
		add(w->held, s->id, size * mw_sample_weight(size) / 1024);
	} else {
		add(w->held, s->id, size);
	}
}

int mw_held_take(struct mw_held *held)
{
	struct walk w = { held, 0 };
	void *p;

	if (mw_age_unit != MW_AGE_GC)
		return -ENOTSUP;
	held->nsites = mw_sites_count();
	held->len = (size_t)held->nsites * sizeof(*held->bytes) + 1;
	p = mmap(NULL, held->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	held->bytes = p;
	w.now = held->generation = mw_track_now();
	held->max_age = 0;
	mw_live_each(0, oldest, &w);
	held->min_age = held->max_age / 2 > 1 ? held->max_age / 2 : 1;
	/* right after our full GC: all it kept was referenced */
	if (__atomic_load_n(&mw_gc_ours, __ATOMIC_RELAXED) == w.now)
		held->min_age = 1;
	mw_live_each(0, held_one, &w);
	return 0;
}

void mw_held_free(struct mw_held *held)
{
	munmap(held->bytes, held->len);
	held->bytes = NULL;
}
