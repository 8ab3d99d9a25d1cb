/* mwrap.c - library life cycle: start-up in preload mode, the exit dump,
 * and the C API of mwrap.h.
 */
#define _GNU_SOURCE
#include "mwrap.h"
#include "report/allocator.h"
#include "report/dump.h"
#include "base/fmt.h"
#include "control/fork.h"
#include "hook/got.h"
#include "hook/rbheap.h"
#include "core/live.h"
#include "base/options.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "core/sample.h"
#include "core/sites.h"
#include "core/track.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Options from MWRAP=, read once at start-up. */
static struct mw_options preload_opts;

static void say(const char *a, const char *b)
{
	const char *parts[] = { "mwrap: ", a, b, "\n" };
	size_t i;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (write(2, parts[i], strlen(parts[i])) < 0)
			return;
}

static void page_line(uintptr_t addr, uint64_t generation, void *arg)
{
	struct mw_out *o = arg;

	mw_out_hex(o, addr);
	mw_out_chr(o, '\t');
	mw_out_u64(o, generation, 0);
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

/* dump_heap:MASK: 1 heap-page stats, 2 one line per live page. */
static void dump_heap_pages(int fd, unsigned mask)
{
	struct mw_heap_pages st;
	struct mw_out o;

	mw_heap_pages_stat(&st);
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
		mw_heap_pages_each(page_line, &o);
		mw_out_flush(&o);
	}
}

static void exit_dump(void)
{
	const struct mw_options *o = &preload_opts;
	int fd = -1, own = 0;

	mw_tls.guard++;
	if (o->dump_path[0]) {
		fd = open(o->dump_path,
			  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			say("cannot open dump_path ", o->dump_path);
		own = 1;
	} else if (o->dump_fd > 0) {
		fd = o->dump_fd;
	}
	if (fd >= 0 && !(o->dump_heap & 4))
		mw_dump(fd, o->dump_min, o->format);
	if (fd >= 0 && (o->dump_heap & 3))
		dump_heap_pages(fd, o->dump_heap);
	if (own && fd >= 0)
		close(fd);
	/* Later exit handlers and destructors (liburcu's among them) may
	 * still allocate: from here on, pass everything through. */
	mw_track_disable();
	mw_tls.guard--;
}

/* True when our malloc is the one the program calls: we were preloaded
 * (dlopen'ed late, the global scope still finds libc's first). */
static int interposing(void)
{
	return dlsym(RTLD_DEFAULT, "malloc") == (void *)mw_hook_malloc;
}

/* Named in LD_PRELOAD: preloaded, yet another object's malloc comes
 * first (a program that put its allocator before us for its child). */
static int preloaded(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "libmwrap.so");
}

__attribute__((constructor)) static void mw_preload_init(void)
{
	char err[160];

	mw_tls.guard++;
	if (mw_real_resolve() != 0) {
		say("cannot find the real malloc functions; not tracing", "");
		goto out;
	}
	if (!interposing()) {
		/* dlopen'ed: mw_attach() starts us */
		if (mw_real_use_global())
			say("cannot find the process's malloc functions", "");
		else
			mw_allocator_detect();
		if (getenv("MWRAP") && preloaded())
			say("another malloc comes first in LD_PRELOAD, so this "
			    "process is not traced and writes no dump: ",
			    "put libmwrap.so first (scripts/mwrap does)");
		goto out;
	}
	mw_allocator_detect();
	if (mw_options_parse(getenv("MWRAP"), &preload_opts, err,
			     sizeof(err))) {
		say("MWRAP: ", err);
		say("running untraced", "");
		goto out;
	}
	if (mw_sites_init()) {
		say("cannot create the site table; not tracing", "");
		goto out;
	}
	mw_ruby_init();
	mw_fork_init(NULL);
	if (mw_options_want_dump(&preload_opts))
		atexit(exit_dump);
	mw_sample_bytes = preload_opts.sample;
	mw_track_enable();
	/* interposition covers malloc; heap pages need libruby's GOT */
	if (mw_heap_init()) {
		mw_got_set_kinds(MW_GOT_HEAP);
		mw_got_patch_all();
	}
out:
	mw_tls.guard--;
}

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
	return ++mw_tls.quiet;
}

EXPORT int mw_quiet_leave(void)
{
	if (mw_tls.quiet > 0)
		mw_tls.quiet--;
	return mw_tls.quiet;
}

static void site_info(const struct mw_site *s, struct mw_site_info *si)
{
	struct mw_counts c;

	mw_counts_read(&s->counts, &c);
	si->id = s->id;
	si->total = c.total;
	si->allocations = c.allocations;
	si->frees = c.frees;
	si->freed_bytes = c.freed_bytes;
	si->age_total = c.age_total;
	si->max_lifespan = c.max_lifespan;
	si->live_bytes = mw_sub0(si->total, si->freed_bytes);
	si->live_count = mw_sub0(si->allocations, si->frees);
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

		if (!s)
			continue;
		site_info(s, &si);
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
	site_info(s, si);
	mw_site_name(s, buf, len);
	si->location = buf;
	return 0;
}

struct live_walk {
	void (*fn)(uint64_t size, uint64_t generation, void *);
	void *arg;
};

static void live_one(const struct mw_live_entry *e, void *arg)
{
	struct live_walk *w = arg;

	w->fn(mw_live_size(e), mw_live_birth(e), w->arg);
}

EXPORT int mw_site_each_live(uint32_t id,
			     void (*fn)(uint64_t, uint64_t, void *), void *arg)
{
	struct live_walk w = { fn, arg };

	if (!mw_site_get(id))
		return -ENOENT;
	mw_quiet_enter();
	mw_live_each(id, live_one, &w);
	mw_quiet_leave();
	return 0;
}

EXPORT int mw_heap_pages_stat(struct mw_heap_pages *out)
{
	struct mw_heap_stat st;

	mw_heap_stat(&st);
	out->page_size = st.page_size;
	out->live_pages = st.live_pages;
	out->allocated_pages = st.allocated_pages;
	out->freed_pages = st.freed_pages;
	out->lifespan_min = st.lifespan_min;
	out->lifespan_max = st.lifespan_max;
	out->lifespan_mean = st.lifespan_mean;
	out->lifespan_stddev = st.lifespan_stddev;
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
	uint32_t id, n = mw_sites_count();

	memset(st, 0, sizeof(*st));
	st->enabled = __atomic_load_n(&mw_enabled, __ATOMIC_RELAXED);
	st->age_unit_gc = mw_age_unit == MW_AGE_GC;
	st->seconds = mw_sub0(mw_monotonic_ns(), mw_track_since_ns) / 1000000000u;
	st->sites = n - 1;
	for (id = 1; id < n; id++) {
		const struct mw_site *s = mw_site_get(id);
		struct mw_site_info si;

		if (!s)
			continue;
		site_info(s, &si);
		st->total_bytes += si.total;
		st->total_allocations += si.allocations;
		st->total_frees += si.frees;
		st->freed_bytes += si.freed_bytes;
	}
	st->live_bytes = mw_sub0(st->total_bytes, st->freed_bytes);
	st->live_blocks = mw_live_count();
	st->unknown_frees = mw_live_unknown();
	st->dropped = mw_live_dropped + mw_sites_dropped;
	st->memory_bytes = mw_live_memory() + mw_sites_memory();
	return 0;
}
