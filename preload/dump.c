/* dump.c - see dump.h */
#define _GNU_SOURCE
#include "dump.h"
#include "fmt.h"
#include "live.h"
#include "mwrap.h"
#include "sample.h"
#include "track.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

#define VERSION "0.1"

/* A bounded string builder over a caller's buffer. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_mem(struct sbuf *b, const char *s, size_t n)
{
	while (n-- && b->len + 1 < b->cap)
		b->p[b->len++] = *s++;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_mem(b, s, strlen(s));
}

static void sb_hex(struct sbuf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	sb_str(b, "0x");
	while (n--)
		sb_mem(b, &tmp[n], 1);
}

/* The main program's link map has an empty name. */
static const char *exe_path(void)
{
	static char path[512];

	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0)
			memcpy(path, "?", 2);
		else
			path[n] = '\0';
	}
	return path;
}

size_t mw_site_name(const struct mw_site *s, char *buf, size_t len)
{
	struct sbuf b = { buf, 0, len };
	Dl_info info;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (s->key) {
		sb_str(&b, s->key);
		return b.len;
	}
	if (dladdr((void *)s->addr, &info) && info.dli_fname) {
		sb_str(&b, info.dli_fname[0] ? info.dli_fname : exe_path());
		sb_str(&b, "(");
		if (info.dli_sname && info.dli_saddr) {
			sb_str(&b, info.dli_sname);
			sb_str(&b, "+");
			sb_hex(&b, s->addr - (uintptr_t)info.dli_saddr);
		} else {
			sb_str(&b, "+");
			sb_hex(&b, s->addr - (uintptr_t)info.dli_fbase);
		}
		sb_str(&b, ")");
	}
	sb_str(&b, "[");
	sb_hex(&b, s->addr);
	sb_str(&b, "]");
	return b.len;
}

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

static void header_text(struct mw_out *o)
{
	mw_out_str(o, "# mwrap-attach " VERSION " pid=");
	mw_out_u64(o, (uint64_t)getpid(), 0);
	mw_out_str(o, " age_unit=");
	mw_out_str(o, age_unit_name());
	mw_out_str(o, " sample_bytes=");
	mw_out_u64(o, mw_sample_bytes, 0);
	mw_out_str(o, " columns=total_bytes,call_count,location\n");
}

/* malloc's own view (all arenas; takes each arena's lock briefly, so
 * never from a hook): what it holds from the system, what is in use,
 * what is free inside it.  The gap between RSS, malloc_in_use and our
 * tracked live bytes is the fragmentation and the untracked part. */
static void header_malloc(struct mw_out *o)
{
	struct mallinfo2 mi = mallinfo2();

	mw_out_str(o, ",\"malloc_arena_bytes\":");
	mw_out_u64(o, mi.arena + mi.hblkhd, 0);
	mw_out_str(o, ",\"malloc_in_use_bytes\":");
	mw_out_u64(o, mi.uordblks + mi.hblkhd, 0);
	mw_out_str(o, ",\"malloc_free_bytes\":");
	mw_out_u64(o, mi.fordblks, 0);
}

static void header_json(struct mw_out *o)
{
	struct mw_stats st;

	mw_stats(&st);
	mw_out_str(o, "{\"type\":\"header\",\"version\":\"" VERSION
		      "\",\"pid\":");
	mw_out_u64(o, (uint64_t)getpid(), 0);
	mw_out_str(o, ",\"seconds\":");
	mw_out_u64(o, st.seconds, 0);
	mw_out_str(o, ",\"rss_bytes\":");
	mw_out_u64(o, mw_rss_bytes(), 0);
	mw_out_str(o, ",\"tracked_live_bytes\":");
	mw_out_u64(o, st.live_bytes, 0);
	mw_out_str(o, ",\"age_unit\":\"");
	mw_out_str(o, age_unit_name());
	mw_out_str(o, "\",\"sample_bytes\":");
	mw_out_u64(o, mw_sample_bytes, 0);
	mw_out_str(o, ",\"unknown_frees\":");
	mw_out_u64(o, st.unknown_frees, 0);
	header_malloc(o);
	mw_out_str(o, "}\n");
}

static void site_json(struct mw_out *o, const struct mw_site *s,
		      const char *name, uint64_t total, uint64_t allocs)
{
	uint64_t frees = __atomic_load_n(&s->frees, __ATOMIC_RELAXED);
	uint64_t freed = __atomic_load_n(&s->freed_bytes, __ATOMIC_RELAXED);

	mw_out_str(o, "{\"type\":\"site\",\"location\":");
	mw_out_json_str(o, name);
	mw_out_str(o, ",\"total_bytes\":");
	mw_out_u64(o, total, 0);
	mw_out_str(o, ",\"allocations\":");
	mw_out_u64(o, allocs, 0);
	mw_out_str(o, ",\"frees\":");
	mw_out_u64(o, frees, 0);
	mw_out_str(o, ",\"freed_bytes\":");
	mw_out_u64(o, freed, 0);
	mw_out_str(o, ",\"live_bytes\":");
	mw_out_u64(o, mw_sub0(total, freed), 0);
	mw_out_str(o, ",\"live_count\":");
	mw_out_u64(o, mw_sub0(allocs, frees), 0);
	mw_out_str(o, ",\"age_total\":");
	mw_out_u64(o, __atomic_load_n(&s->age_total, __ATOMIC_RELAXED), 0);
	mw_out_str(o, ",\"max_lifespan\":");
	mw_out_u64(o, __atomic_load_n(&s->max_lifespan, __ATOMIC_RELAXED),
		   0);
	mw_out_str(o, "}\n");
}

int mw_dump(int fd, uint64_t min, enum mw_format format)
{
	struct mw_out o;
	char name[4096];
	uint32_t id, n = mw_sites_count();

	mw_out_init(&o, fd);
	if (format == MW_FORMAT_JSON)
		header_json(&o);
	else
		header_text(&o);
	for (id = 1; id < n; id++) {
		const struct mw_site *s = mw_site_get(id);
		uint64_t total, allocs;

		if (!s)
			continue;
		total = __atomic_load_n(&s->total, __ATOMIC_RELAXED);
		allocs = __atomic_load_n(&s->allocations, __ATOMIC_RELAXED);
		if (total <= min)
			continue;
		mw_site_name(s, name, sizeof(name));
		if (format == MW_FORMAT_JSON) {
			site_json(&o, s, name, total, allocs);
		} else {
			mw_out_u64(&o, total, 16);
			mw_out_chr(&o, ' ');
			mw_out_u64(&o, allocs, 12);
			mw_out_chr(&o, ' ');
			mw_out_str(&o, name);
			mw_out_chr(&o, '\n');
		}
	}
	return mw_out_flush(&o);
}
