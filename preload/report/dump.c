/* SPDX-License-Identifier: MIT */
/* dump.c - see dump.h */
#define _GNU_SOURCE
#include "report/dump.h"
#include "report/allocator.h"
#include "report/held.h"
#include "report/stats.h"
#include "report/symbolize.h"
#include "base/bheap.h"
#include "base/fmt.h"
#include "core/live.h"
#include "core/rbpos.h"
#include "mwrap.h"
#include "core/sample.h"
#include "core/stacks.h"
#include "core/track.h"
#include "hook/rbheap.h"
#include "common/clock.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <malloc.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>


uint64_t mw_rss_bytes(void)
{
	char buf[128];
	ssize_t n;
	uint64_t pages = 0;
	char *p;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strchr(buf, ' ');	/* second field: resident pages */
	if (!p)
		return 0;
	for (p++; *p >= '0' && *p <= '9'; p++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static const char *age_unit_name(void)
{
	return mw_age_unit == MW_AGE_GC ? "gc_generations" : "ns";
}

/* Tracked live bytes less the bytes of earlier blocks freed meanwhile:
 * how the window changed the heap, where live bytes alone count only
 * what it added (its blocks are new, the frees of older ones unseen). */
static int64_t net_change(const struct mw_stats *st)
{
	return (int64_t)st->live_bytes - (int64_t)mw_live_unknown_bytes();
}

static void header_text(struct mw_out *o)
{
	struct mw_stats st;
	const char *a;

	mw_stats_collect(&st);

	mw_out_str(o, "# mwrap-attach " MW_VERSION " pid=");
	mw_out_u64(o, (uint64_t)getpid(), 0);
	mw_out_str(o, " age_unit=");
	mw_out_str(o, age_unit_name());
	mw_out_str(o, " sample_bytes=");
	mw_out_u64(o, mw_sample_bytes, 0);
	mw_out_str(o, " allocator=");
	for (a = mw_allocator_name(); *a; a++)	/* one word */
		mw_out_chr(o, *a == ' ' ? '-' : *a);
	mw_out_str(o, " tracked_live_bytes=");
	mw_out_u64(o, st.live_bytes, 0);
	mw_out_str(o, " unknown_frees=");
	mw_out_u64(o, st.unknown_frees, 0);
	mw_out_str(o, " unknown_freed_bytes=");
	mw_out_u64(o, mw_live_unknown_bytes(), 0);
	mw_out_str(o, " net_change_bytes=");
	mw_out_i64(o, net_change(&st));
	mw_out_str(o, " columns=total_bytes,call_count,location\n");
}

/* The process's memory beside ours: RSS, malloc's own view (all arenas;
 * mallinfo2 takes each arena's lock briefly, so never from a hook) and
 * the tracked live bytes.  The gaps between them are fragmentation and
 * the untracked part. */
void mw_dump_memory_fields(struct mw_out *o, uint64_t tracked_live, bool with_malloc)
{
	struct mw_mallinfo mi;

	mw_out_str(o, "\"pid\":");
	mw_out_u64(o, (uint64_t)getpid(), 0);
	mw_out_json_u64(o, "rss_bytes", mw_rss_bytes());
	mw_out_json_u64(o, "tracked_live_bytes", tracked_live);
	mw_out_str(o, ",\"allocator\":");
	mw_out_json_str(o, mw_allocator_name());
	/* glibc's mallinfo2 says nothing of another heap, and where there
	 * is none (musl) the fields are left out, never zero */
	if (!with_malloc || !mw_allocator_is_glibc() || mw_mallinfo(&mi))
		return;
	mw_out_json_u64(o, "malloc_arena_bytes", mi.arena_bytes);
	mw_out_json_u64(o, "malloc_in_use_bytes", mi.in_use_bytes);
	mw_out_json_u64(o, "malloc_free_bytes", mi.free_bytes);
}

/* @with_malloc false: without malloc's view (a window's --top samples,
 * twice a second: mallinfo2 walks every arena's bins under its lock,
 * ~2 ms in a Puma worker, and stalls its threads' mallocs meanwhile).
 * @held: the sites carry held_bytes, counted against this GC count. */
static void header_json(struct mw_out *o, bool with_malloc,
			const struct mw_held *held, bool at_exit)
{
	struct mw_stats st;

	mw_stats_collect(&st);
	mw_out_str(o, "{\"type\":\"header\",\"version\":\"" MW_VERSION "\",");
	mw_dump_memory_fields(o, st.live_bytes, with_malloc);
	mw_out_json_u64(o, "seconds", st.seconds);
	mw_out_str(o, ",\"age_unit\":\"");
	mw_out_str(o, age_unit_name());
	mw_out_chr(o, '"');
	mw_out_json_u64(o, "sample_bytes", mw_sample_bytes);
	/* a process without Ruby has only native sites: the report says so */
	mw_out_str(o, mw_ruby_present ? ",\"ruby\":true" : ",\"ruby\":false");
	mw_out_str(o, ",\"ruby_frames\":\"");
	mw_out_str(o, mw_ruby_frames_how());
	mw_out_chr(o, '"');
	if (mw_stack_sample_bytes)
		mw_out_json_u64(o, "stack_sample_bytes", mw_stack_sample_bytes);
	mw_out_json_u64(o, "unknown_frees", st.unknown_frees);
	mw_out_json_u64(o, "unknown_freed_bytes", mw_live_unknown_bytes());
	mw_out_str(o, ",\"net_change_bytes\":");
	mw_out_i64(o, net_change(&st));
	if (held) {
		mw_out_json_u64(o, "held_gc_count", held->generation);
		mw_out_json_u64(o, "held_min_age", held->min_age);
		mw_out_json_u64(o, "held_window_gcs", held->max_age);
	}
	if (at_exit)
		mw_out_str(o, ",\"at_exit\":true");
	mw_out_str(o, "}\n");
}

static void scan_header_json(struct mw_out *o, const struct mw_scan *sc)
{
	mw_out_str(o, "{\"type\":\"scan\",\"blocks\":");
	mw_out_u64(o, sc->blocks, 0);
	mw_out_json_u64(o, "memory_bytes", sc->memory_bytes);
	mw_out_json_u64(o, "mapped_bytes", sc->total_bytes);
	mw_out_json_u64(o, "not_resident_bytes", sc->not_resident_bytes);
	mw_out_json_u64(o, "ms", sc->ms);
	mw_out_str(o, ",\"complete\":");
	mw_out_str(o, sc->complete ? "true" : "false");
	mw_out_str(o, "}\n");
}

/* --stacks: ,"stack":["path:line in label", ...], innermost first. */
static void stack_json(struct mw_out *o, const char *t, size_t len)
{
	const char *end = t + len;

	mw_out_str(o, ",\"stack\":[");
	while (t < end) {
		const char *nl = memchr(t, '\n', (size_t)(end - t));
		const char *stop = nl ? nl : end;

		mw_out_json_strn(o, t, (size_t)(stop - t));
		if (!nl)
			break;
		mw_out_chr(o, ',');
		t = nl + 1;
	}
	mw_out_chr(o, ']');
}

static void site_json(struct mw_out *o, const struct mw_site *s,
		      const char *name, const struct mw_counts *c,
		      const struct mw_scan *scan, const struct mw_held *held)
{
	mw_out_str(o, mw_site_is_stack_record(s) ? "{\"type\":\"stack\",\"location\":"
					 : "{\"type\":\"site\",\"location\":");
	mw_out_json_str(o, name);
	mw_out_json_u64(o, "total_bytes", c->total);
	mw_out_json_u64(o, "allocations", c->allocations);
	mw_out_json_u64(o, "frees", c->frees);
	mw_out_json_u64(o, "freed_bytes", c->freed_bytes);
	mw_out_json_u64(o, "live_bytes", mw_sub0(c->total, c->freed_bytes));
	mw_out_json_u64(o, "live_count", mw_sub0(c->allocations, c->frees));
	mw_out_json_u64(o, "age_total", c->age_total);
	mw_out_json_u64(o, "max_lifespan", c->max_lifespan);
	if (held) {
		/* never above live: counts are read while they move */
		uint64_t live = mw_sub0(c->total, c->freed_bytes);
		uint64_t h = s->id < held->nsites ? held->bytes[s->id] : 0;

		mw_out_json_u64(o, "held_bytes", h < live ? h : live);
	}
	if (s->stack)
		stack_json(o, s->stack, s->stacklen);
	if (scan) {
		static const struct mw_scan_site none;
		const struct mw_scan_site *r =
			s->id < scan->nsites ? &scan->sites[s->id] : &none;

		mw_out_json_u64(o, "scanned_bytes", r->scanned_bytes);
		mw_out_json_u64(o, "unreferenced_bytes", r->unref_bytes);
		mw_out_json_u64(o, "unreferenced_count", r->unref_count);
	}
	mw_out_str(o, "}\n");
}

static void write_site(struct mw_out *o, const struct mw_dump_req *req,
		       const struct mw_site *s, uint32_t pass,
		       const struct mw_held *held)
{
	char name[4096];
	struct mw_counts c;

	mw_counts_read(&s->counts, &c);
	if (c.total <= req->min ||
	    (mw_site_is_stack_record(s) && req->format != MW_FORMAT_JSON))
		return;
	mw_site_name_pass(s, name, sizeof(name), pass);
	if (req->format == MW_FORMAT_JSON) {
		site_json(o, s, name, &c, req->scan, held);
	} else {
		mw_out_u64(o, c.total, 16);
		mw_out_chr(o, ' ');
		mw_out_u64(o, c.allocations, 12);
		mw_out_chr(o, ' ');
		mw_out_str(o, name);
		mw_out_chr(o, '\n');
	}
}

/* --top: a min-heap of the @cap sites with most live bytes so far. */
struct ranked {
	uint64_t live;
	uint32_t id;
};

static int holds_less(const void *a, const void *b)
{
	return ((const struct ranked *)a)->live <
	       ((const struct ranked *)b)->live;
}

static int write_top(struct mw_out *o, const struct mw_dump_req *req,
		     uint32_t nsites, uint32_t pass)
{
	size_t cap = req->top < nsites ? req->top : nsites, n = 0, len;
	struct ranked *h;
	uint32_t id;

	len = cap * sizeof(*h) + 1;
	h = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		return -ENOMEM;
	for (id = 1; id < nsites; id++) {
		const struct mw_site *s = mw_site_get(id);
		struct mw_counts c;
		uint64_t live;

		if (!s || mw_site_is_stack_record(s))
			continue;
		mw_counts_read(&s->counts, &c);
		if (c.total <= req->min)
			continue;
		live = mw_sub0(c.total, c.freed_bytes);
		if (n < cap) {
			h[n].live = live;
			h[n].id = id;
			mw_bheap_up(h, sizeof(*h), n++, holds_less);
		} else if (cap && live > h[0].live) {
			h[0].live = live;
			h[0].id = id;
			mw_bheap_down(h, sizeof(*h), 0, n, holds_less);
		}
	}
	/* a min-heap sorts descending */
	mw_bheap_sort(h, sizeof(*h), n, holds_less);
	for (id = 0; id < n; id++)
		write_site(o, req, mw_site_get(h[id].id), pass, NULL);
	munmap(h, cap * sizeof(*h) + 1);
	return 0;
}

int mw_dump_req(int fd, const struct mw_dump_req *req)
{
	struct mw_held held, *hp = NULL;
	struct mw_out o;
	uint32_t id, n = mw_sites_count(), pass = mw_symbolize_pass();
	int ret = 0, flushed;

	/* a whole table's JSON splits live bytes into held and in flight */
	if (req->format == MW_FORMAT_JSON && !req->top &&
	    mw_held_take(&held) == 0)
		hp = &held;
	mw_out_init(&o, fd);
	if (req->format == MW_FORMAT_JSON) {
		header_json(&o, !req->top, hp, req->at_exit);
		if (req->scan)
			scan_header_json(&o, req->scan);
	} else {
		header_text(&o);
	}
	if (req->top) {
		ret = write_top(&o, req, n, pass);
	} else {
		uint64_t next = mw_monotonic_ns() + 500000000u;

		for (id = 1; id < n; id++) {
			const struct mw_site *s = mw_site_get(id);

			if (s)
				write_site(&o, req, s, pass, hp);
			if (req->progress && !(id & 4095) &&
			    mw_monotonic_ns() >= next) {
				req->progress(id, n, req->progress_arg);
				next = mw_monotonic_ns() + 500000000u;
			}
		}
	}
	/* the objects its native sites are in (pprof's mappings) */
	if (req->format == MW_FORMAT_JSON)
		mw_symbolize_mappings_json(&o, pass);
	flushed = mw_out_flush(&o);
	if (hp)
		mw_held_free(hp);
	return flushed ? flushed : ret;
}

int mw_dump(int fd, uint64_t min, enum mw_format format)
{
	struct mw_dump_req req = { min, format, 0, NULL, NULL, NULL, false };

	return mw_dump_req(fd, &req);
}

int mw_dump_at_exit(int fd, uint64_t min, enum mw_format format)
{
	struct mw_dump_req req = { min, format, 0, NULL, NULL, NULL, true };

	return mw_dump_req(fd, &req);
}

/* --- Ruby heap pages (dump_heap:MASK) ---------------------------------- */

static void page_line(const struct mw_live_entry *e, void *arg)
{
	struct mw_out *o = arg;

	mw_out_hex(o, mw_live_ptr(e));
	mw_out_chr(o, '\t');
	mw_out_u64(o, mw_live_birth(e), 0);
	mw_out_chr(o, '\n');
}

static void out_i64(struct mw_out *o, const char *name, int64_t v)
{
	mw_out_str(o, name);
	mw_out_i64(o, v);
	mw_out_chr(o, '\n');
}

static void out_f(struct mw_out *o, const char *name, double v)
{
	mw_out_str(o, name);
	mw_out_fixed3(o, v);
	mw_out_chr(o, '\n');
}

void mw_dump_heap_pages(int fd, unsigned mask)
{
	struct mw_heap_pages st;
	struct mw_out o;

	mw_heap_stat(&st);
	mw_out_init(&o, fd);
	if (!st.page_size)
		mw_out_str(&o, "# no heap pages tracked (not a Ruby process)\n");
	if (mask & 1) {
		out_i64(&o, "heap_page_size: ", (int64_t)st.page_size);
		out_i64(&o, "heap_pages: ", (int64_t)st.live_pages);
		out_i64(&o, "heap_pages_allocated: ",
			(int64_t)st.allocated_pages);
		out_i64(&o, "heap_pages_freed: ", (int64_t)st.freed_pages);
		out_i64(&o, "lifespan_max: ", st.lifespan_max);
		out_i64(&o, "lifespan_min: ", st.lifespan_min);
		out_f(&o, "lifespan_mean: ", st.lifespan_mean);
		out_f(&o, "lifespan_stddev: ", st.lifespan_stddev);
		/* mwrap parked freed pages to measure reuse; we never
		 * change the allocator, so these stay empty */
		mw_out_str(&o, "deathspan_max: -1\ndeathspan_min: -1\n"
			       "deathspan_mean: Infinity\n"
			       "deathspan_stddev: 0.000\nresurrects: 0\n");
		out_i64(&o, "gc_count: ", (int64_t)mw_ruby_generation);
	}
	mw_out_flush(&o);
	if (mask & 2) {
		mw_out_init(&o, fd);
		mw_track_quiet_enter();
		mw_live_each(MW_SITE_HEAP_PAGES, page_line, &o);
		mw_track_quiet_leave();
		mw_out_flush(&o);
	}
}
