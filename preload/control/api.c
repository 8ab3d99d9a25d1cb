/* SPDX-License-Identifier: MIT */
/* api.c - the exported C API of mwrap.h: thin wrappers over the core
 * and the readers, for the Ruby extension and tests.
 */
#define _GNU_SOURCE
#include "mwrap.h"
#include "control/attach.h"
#include "base/export.h"
#include "core/live.h"
#include "core/sites.h"
#include "core/stacks.h"
#include "core/track.h"
#include "hook/rbheap.h"
#include "report/dump.h"
#include "report/stats.h"
#include "report/symbolize.h"

#include <errno.h>
#include <string.h>

EXPORT int mw_dump_fd(int fd, uint64_t min, int format)
{
	int ret;

	if (format != MW_FORMAT_TEXT && format != MW_FORMAT_JSON)
		return -EINVAL;
	mw_tls.guard++;
	ret = mw_dump(fd, min, (enum mw_format)format);
	mw_tls.guard--;
	return ret;
}

EXPORT int mw_reset(void)
{
	mw_tls.guard++;
	mw_track_reset();
	mw_tls.guard--;
	return 0;
}

EXPORT int mw_quiet_enter(void)
{
	return mw_track_quiet_enter();
}

EXPORT int mw_quiet_leave(void)
{
	return mw_track_quiet_leave();
}

EXPORT int mw_each(uint64_t min,
		   int (*fn)(const struct mw_site_info *, void *), void *arg)
{
	char name[4096];
	uint32_t id, n = mw_sites_count();
	int ret = 0;

	mw_quiet_enter();
	for (id = 1; id < n && !ret; id++) {
		const struct mw_site *s = mw_site_get(id);
		struct mw_site_info si;

		if (!s || mw_site_is_stack_record(s))	/* its line has it */
			continue;
		mw_stats_site(s, &si);
		if (si.total <= min)
			continue;
		mw_site_name(s, name, sizeof(name));
		si.location = name;
		ret = fn(&si, arg);
	}
	mw_quiet_leave();
	return ret;
}

/* "...[0xHEX]" at the end, or a bare "0xHEX": the address, else 0. */
static uintptr_t parse_addr(const char *s)
{
	const char *p = strrchr(s, '[');
	uintptr_t v = 0;
	int digits = 0;

	p = p ? p + 1 : s;
	if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
		return 0;
	for (p += 2; *p && *p != ']'; p++, digits++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' :
			(*p | 0x20) >= 'a' && (*p | 0x20) <= 'f' ?
			(*p | 0x20) - 'a' + 10 : -1;

		if (d < 0 || digits >= 16)
			return 0;
		v = v << 4 | (uintptr_t)d;
	}
	return digits ? v : 0;
}

EXPORT uint32_t mw_site_lookup(const char *location)
{
	const char *colon = strrchr(location, ':');
	const struct mw_site *s = NULL;
	uintptr_t addr = parse_addr(location);

	if (addr)
		s = mw_site_find_addr(addr);
	if (!s && colon && colon[1]) {
		const char *p;
		long line = 0;

		for (p = colon + 1; *p >= '0' && *p <= '9' && line < 1 << 30; p++)
			line = line * 10 + (*p - '0');
		if (!*p)
			s = mw_site_find_location(location,
						  (size_t)(colon - location),
						  (int)line);
	}
	return s ? s->id : 0;
}

EXPORT int mw_site_info(uint32_t id, struct mw_site_info *si, char *buf,
			size_t len)
{
	const struct mw_site *s = mw_site_get(id);

	if (!s)
		return -ENOENT;
	mw_stats_site(s, si);
	mw_site_name(s, buf, len);
	si->location = buf;
	return 0;
}

struct live_walk {
	uint32_t id;
	void (*fn)(uint64_t size, uint64_t generation, void *);
	void *arg;
};

/* The site's blocks, those of its sampled stacks included. */
static void live_one(const struct mw_live_entry *e, void *arg)
{
	struct live_walk *w = arg;

	if (mw_site_exact_id(mw_live_site(e)) == w->id)
		w->fn(mw_live_size(e), mw_live_birth(e), w->arg);
}

EXPORT int mw_site_each_live(uint32_t id,
			     void (*fn)(uint64_t, uint64_t, void *), void *arg)
{
	struct live_walk w = { id, fn, arg };

	if (!mw_site_get(id))
		return -ENOENT;
	mw_quiet_enter();
	/* one site's entries, or every entry when stacks are sampled */
	mw_live_each(mw_stack_sample_bytes ? 0 : id, live_one, &w);
	mw_quiet_leave();
	return 0;
}

EXPORT int mw_heap_pages_stat(struct mw_heap_pages *out)
{
	mw_heap_stat(out);
	return 0;
}

struct page_walk {
	void (*fn)(uintptr_t, uint64_t, void *);
	void *arg;
};

static void page_one(const struct mw_live_entry *e, void *arg)
{
	struct page_walk *w = arg;

	w->fn(mw_live_ptr(e), mw_live_birth(e), w->arg);
}

EXPORT int mw_heap_pages_each(void (*fn)(uintptr_t, uint64_t, void *),
			      void *arg)
{
	struct page_walk w = { fn, arg };

	mw_quiet_enter();
	mw_live_each(MW_SITE_HEAP_PAGES, page_one, &w);
	mw_quiet_leave();
	return 0;
}

EXPORT int mw_stats(struct mw_stats *st)
{
	mw_stats_collect(st);
	st->attached = mw_attach_active();
	return 0;
}
