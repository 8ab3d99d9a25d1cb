/* rbheap.c - see rbheap.h.  The GOT patcher points libruby's mmap/munmap
 * slots at mw_hook_mmap/munmap (hooklist.h). */
#define _GNU_SOURCE
#include "hook/rbheap.h"
#include "core/hooklist.h"
#include "core/live.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "core/sites.h"
#include "base/spin.h"
#include "core/track.h"

#include <dlfcn.h>
#include <math.h>	/* HUGE_VAL only: no libm in this library */
#include <string.h>
#include <sys/mman.h>

static uint64_t page_size;	/* 0: not tracking heap pages */

/* Lifespan statistics (Welford), protected by stat_lock. */
static int stat_lock;
static uint64_t allocated, freed, n;
static int64_t life_min = -1, life_max = -1;
static double mean, m2;

int mw_heap_init(void)
{
	const int *api;

	if (page_size)
		return 1;
	api = dlsym(RTLD_DEFAULT, "ruby_api_version");
	if (!mw_real.mmap || !mw_real.munmap || !api || !mw_ruby_present)
		return 0;
	/* HEAP_PAGE_SIZE: 16 KiB up to Ruby 3.1, 64 KiB from 3.2 */
	page_size = (api[0] > 3 || (api[0] == 3 && api[1] >= 2)) ? 65536 : 16384;
	return 1;
}

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

void *mw_hook_mmap(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off)
{
	void *p = mw_real.mmap(addr, len, prot, flags, fd, off);
	uintptr_t body;

	if (p == MAP_FAILED || !page_size || len != 2 * page_size || addr ||
	    fd != -1 || !(flags & MAP_ANONYMOUS) ||
	    prot != (PROT_READ | PROT_WRITE) || !mw_tracking())
		return p;
	/* the body Ruby keeps: the aligned page inside the mapping */
	body = ((uintptr_t)p + page_size) & ~(uintptr_t)(page_size - 1);
	mw_tls.guard++;
	mw_track_page_map(body, page_size);
	mw_spin_lock(&stat_lock);
	allocated++;
	mw_spin_unlock(&stat_lock);
	mw_tls.guard--;
	return p;
}

int mw_hook_munmap(void *addr, size_t len)
{
	int64_t life;

	if (page_size && len == page_size && mw_tracking() &&
	    !((uintptr_t)addr & (page_size - 1))) {
		mw_tls.guard++;
		if (mw_track_page_unmap((uintptr_t)addr, &life)) {
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
		mw_tls.guard--;
	}
	return mw_real.munmap(addr, len);
}

static void count_page(const struct mw_live_entry *e, void *arg)
{
	(void)e;
	(*(uint64_t *)arg)++;
}

void mw_heap_stat(struct mw_heap_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->page_size = page_size;
	mw_live_each(MW_SITE_HEAP_PAGES, count_page, &st->live_pages);
	mw_spin_lock(&stat_lock);
	st->allocated_pages = allocated;
	st->freed_pages = freed;
	st->lifespan_min = life_min;
	st->lifespan_max = life_max;
	st->lifespan_mean = n ? mean : HUGE_VAL;
	st->lifespan_stddev = n > 1 ? root(m2 / (double)(n - 1)) : 0.0;
	mw_spin_unlock(&stat_lock);
}

void mw_heap_fork_lock(void)
{
	mw_spin_lock(&stat_lock);
}

void mw_heap_fork_unlock(void)
{
	mw_spin_unlock(&stat_lock);
}

void mw_heap_reset(void)
{
	mw_spin_lock(&stat_lock);
	allocated = freed = n = 0;
	life_min = life_max = -1;
	mean = m2 = 0;
	mw_spin_unlock(&stat_lock);
}
