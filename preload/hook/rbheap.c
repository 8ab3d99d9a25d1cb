/* SPDX-License-Identifier: MIT */
/* rbheap.c - see rbheap.h.  The GOT patcher points libruby's mmap/munmap
 * slots at mw_hook_mmap/munmap (hooklist.h). */
#define _GNU_SOURCE
#include "hook/rbheap.h"
#include "core/hooklist.h"
#include "core/live.h"
#include "core/pagestats.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "core/sites.h"
#include "core/track.h"

#include <dlfcn.h>
#include <sys/mman.h>

/* 0: not tracking heap pages.  Written once by mw_heap_init (the
 * constructor or the helper) before libruby's slots point at the hooks,
 * which read it; never changes afterwards. */
static uint64_t page_size;

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
	mw_pagestats_mapped();
	mw_tls.guard--;
	return p;
}

int mw_hook_munmap(void *addr, size_t len)
{
	int64_t life;

	if (page_size && len == page_size && mw_tracking() &&
	    !((uintptr_t)addr & (page_size - 1))) {
		mw_tls.guard++;
		if (mw_track_page_unmap((uintptr_t)addr, &life))
			mw_pagestats_unmapped(life);
		mw_tls.guard--;
	}
	return mw_real.munmap(addr, len);
}

static void count_page(const struct mw_live_entry *e, void *arg)
{
	(void)e;
	(*(uint64_t *)arg)++;
}

void mw_heap_stat(struct mw_heap_pages *st)
{
	mw_pagestats_read(st);
	st->page_size = page_size;
	mw_live_each(MW_SITE_HEAP_PAGES, count_page, &st->live_pages);
}
