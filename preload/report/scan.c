/* SPDX-License-Identifier: MIT */
/* scan.c - see scan.h */
#define _GNU_SOURCE
#include "report/scan.h"
#include "base/bheap.h"
#include "core/live.h"
#include "core/sites.h"
#include "core/stacks.h"
#include "core/track.h"
#include "common/clock.h"
#include "common/procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1u << 20)	/* bytes read per process_vm_readv */
#define MAX_REGIONS 65536

/* A snapshot of one live block; sorted by start. */
struct block {
	uintptr_t start;
	uint64_t size_site;	/* size: low 40 bits, site id: high 24 */
};

struct region {
	uintptr_t start, end;
};

/* Everything the scan maps; all of it is skipped when reading. */
struct work {
	struct block *blocks;
	size_t nblocks, cap;
	uint8_t *marks;		/* 1 bit per block */
	struct region *regions;
	size_t nregions;
	char *buf;		/* CHUNK bytes */
	uintptr_t stack_lo, stack_hi;	/* this thread's stack mapping */
	int pagemap;		/* /proc/self/pagemap, or -1 */
};

static void *map(size_t len)
{
	void *m = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static inline uint64_t bsize(const struct block *b)
{
	return b->size_site & ((UINT64_C(1) << 40) - 1);
}

static inline uint32_t bsite(const struct block *b)
{
	return (uint32_t)(b->size_site >> 40);
}

/* --- the snapshot ----------------------------------------------------- */

static void take_block(const struct mw_live_entry *e, void *arg)
{
	struct work *w = arg;
	uint32_t site = mw_live_site(e);

	/* Ruby's heap pages are mmap'd by Ruby, not malloc blocks, and
	 * code markers stand for blocks allocated before we tracked */
	if (site == MW_SITE_HEAP_PAGES || site == MW_SITE_CODE ||
	    w->nblocks == w->cap)
		return;
	w->blocks[w->nblocks].start = mw_live_ptr(e);
	/* a sampled stack's block is its line's (exact) */
	w->blocks[w->nblocks].size_site = mw_live_size(e) |
					  (uint64_t)mw_site_exact_id(site) << 40;
	w->nblocks++;
}

static int starts_later(const void *a, const void *b)
{
	return ((const struct block *)a)->start >
	       ((const struct block *)b)->start;
}

/* By start address, in place. */
static void sort_blocks(struct block *a, size_t n)
{
	mw_bheap_sort(a, sizeof(*a), n, starts_later);
}

/* --- the regions -------------------------------------------------------- */

/* One mapping: keeps private writable ones but the special ones
 * ([vvar], [vsyscall]) and device files. */
static int take_region(const struct mw_maps_entry *e, void *arg)
{
	struct work *w = arg;

	if (e->perms[0] != 'r' || e->perms[1] != 'w' || e->perms[3] != 'p')
		return 0;
	if ((e->pathlen >= 5 && memcmp(e->path, "/dev/", 5) == 0) ||
	    (e->pathlen >= 6 && memcmp(e->path, "[vvar]", 6) == 0) ||
	    w->nregions == MAX_REGIONS)
		return 0;
	if (w->stack_lo >= e->lo && w->stack_lo < e->hi)
		return 0;	/* our own stack holds snapshot copies */
	w->regions[w->nregions].start = e->lo;
	w->regions[w->nregions].end = e->hi;
	w->nregions++;
	return 0;
}

static int read_regions(struct work *w)
{
	char buf[8192];
	int ret, fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ret = mw_maps_each(fd, buf, sizeof(buf), take_region, w);
	close(fd);
	return ret;
}

/* The scan's own mappings hold copies of block addresses: never read
 * them (the kernel may have merged them with a neighbour's mapping). */
static void own_ranges(const struct work *w, struct region out[4])
{
	out[0].start = (uintptr_t)w->blocks;
	out[0].end = out[0].start + w->cap * sizeof(struct block);
	out[1].start = (uintptr_t)w->marks;
	out[1].end = out[1].start + w->cap / 8 + 1;
	out[2].start = (uintptr_t)w->regions;
	out[2].end = out[2].start + MAX_REGIONS * sizeof(struct region);
	out[3].start = (uintptr_t)w->buf;
	out[3].end = out[3].start + CHUNK;
}

/* Moves @a past any own range it is in and shortens *@len so that
 * [a, a + len) meets none; returns the new @a. */
static uintptr_t clip(const struct region own[4], uintptr_t a, size_t *len)
{
	int i, moved = 1;

	while (moved) {
		moved = 0;
		for (i = 0; i < 4; i++) {
			if (a >= own[i].start && a < own[i].end) {
				size_t skip = own[i].end - a;

				*len = *len > skip ? *len - skip : 0;
				a = own[i].end;
				moved = 1;
			}
		}
	}
	for (i = 0; i < 4; i++)
		if (own[i].start > a && own[i].start - a < *len)
			*len = own[i].start - a;
	return a;
}

/* --- the scan ------------------------------------------------------------ */

/* Marks the block @v points into, unless @from (where @v was found) is
 * inside that block itself. */
static inline void mark(struct work *w, uintptr_t v, uintptr_t from)
{
	size_t lo = 0, hi = w->nblocks;
	const struct block *b;

	while (hi - lo > 1) {		/* last block with start <= v */
		size_t mid = lo + (hi - lo) / 2;

		if (w->blocks[mid].start <= v)
			lo = mid;
		else
			hi = mid;
	}
	b = &w->blocks[lo];
	if (v < b->start || v >= b->start + bsize(b) + (bsize(b) == 0))
		return;
	if (from >= b->start && from < b->start + bsize(b))
		return;
	w->marks[lo / 8] |= (uint8_t)(1u << (lo % 8));
}

static void scan_words(struct work *w, const uintptr_t *words, size_t n,
		       uintptr_t from, uintptr_t lo, uintptr_t hi)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uintptr_t v = words[i];

		if (v >= lo && v < hi)
			mark(w, v, from + i * sizeof(uintptr_t));
	}
}

#define MAX_PAGES (CHUNK / 4096 + 2)

/* Fills @vec with 1 for each of the @n pages from @base that is in the
 * process's page tables (counted in its RSS), else 0: pagemap's present
 * bit; without pagemap, mincore's (the page cache's, for a file).
 * Returns 0, or -1 if the range is gone. */
static int resident(const struct work *w, uintptr_t base, size_t n,
		    uintptr_t page, unsigned char *vec)
{
	uint64_t pm[MAX_PAGES];
	size_t i;

	if (w->pagemap < 0)
		return mincore((void *)base, n * page, vec);
	if (pread(w->pagemap, pm, n * sizeof(*pm),
		  (off_t)(base / page * sizeof(*pm))) != (ssize_t)(n * sizeof(*pm)))
		return -1;
	for (i = 0; i < n; i++)
		vec[i] = (unsigned char)(pm[i] >> 63);
	return 0;
}

/* Reads the resident pages of [@a, @a + @len) (@len <= CHUNK) and
 * scans them; a page not resident is skipped, never read: reading it
 * would fault it in (a file's page, a swapped one) and leave the
 * process bigger.  Returns the bytes covered, read or skipped; less
 * than @len where the range went away. */
static size_t scan_chunk(struct work *w, struct mw_scan *scan, uintptr_t a,
			 size_t len, uintptr_t lo, uintptr_t hi)
{
	unsigned char vec[MAX_PAGES];
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = a & ~(page - 1), end = a + len, p;
	size_t i = 0, npages = (end - base + page - 1) / page;

	if (npages > MAX_PAGES || resident(w, base, npages, page, vec))
		return 0;	/* unmapped meanwhile */
	for (p = a; i < npages;) {
		size_t j = i;
		uintptr_t stop;

		while (j < npages && (vec[j] & 1) == (vec[i] & 1))
			j++;
		stop = base + j * page < end ? base + j * page : end;
		if (vec[i] & 1) {
			struct iovec local = { w->buf, stop - p };
			struct iovec remote = { (void *)p, stop - p };
			ssize_t got = process_vm_readv(getpid(), &local, 1,
						       &remote, 1, 0);

			if (got <= 0)
				return p - a;
			scan_words(w, (const uintptr_t *)w->buf,
				   (size_t)got / sizeof(uintptr_t), p, lo, hi);
			scan->memory_bytes += (uint64_t)got;
			if ((size_t)got < stop - p)
				return p + (uintptr_t)got - a;
		} else {
			scan->not_resident_bytes += stop - p;
		}
		p = stop;
		i = j;
	}
	return len;
}

static void scan_regions(struct work *w, struct mw_scan *scan,
			 uint64_t deadline, mw_scan_progress_fn progress,
			 void *arg)
{
	const struct block *last = &w->blocks[w->nblocks - 1];
	uintptr_t lo = w->blocks[0].start;
	uintptr_t hi = last->start + bsize(last) + 1;
	uint64_t next_report = mw_monotonic_ms() + 500;
	struct region own[4];
	size_t r;

	own_ranges(w, own);
	scan->complete = 1;
	for (r = 0; r < w->nregions; r++) {
		uintptr_t a = w->regions[r].start;

		while (a < w->regions[r].end) {
			size_t len = w->regions[r].end - a, done;
			uint64_t t;

			a = clip(own, a, &len);
			if (!len)
				continue;
			if (len > CHUNK)
				len = CHUNK;
			done = scan_chunk(w, scan, a, len, lo, hi);
			if (done < len)
				break;	/* unmapped meanwhile, or unreadable */
			a += done;
			t = mw_monotonic_ms();
			if (t >= deadline) {
				scan->complete = 0;
				return;
			}
			if (progress && t >= next_report) {
				progress(scan->memory_bytes, scan->total_bytes,
					 arg);
				next_report = t + 500;
			}
		}
	}
}

static void tally(const struct work *w, struct mw_scan *scan)
{
	size_t i;

	for (i = 0; i < w->nblocks; i++) {
		const struct block *b = &w->blocks[i];
		uint32_t site = bsite(b);
		struct mw_scan_site *s;

		if (site >= scan->nsites)
			continue;
		s = &scan->sites[site];
		s->scanned_bytes += bsize(b);
		s->scanned_count++;
		if (!(w->marks[i / 8] & (1u << (i % 8)))) {
			s->unref_bytes += bsize(b);
			s->unref_count++;
		}
	}
}

static void unmap_work(struct work *w)
{
	if (w->blocks)
		munmap(w->blocks, w->cap * sizeof(struct block));
	if (w->marks)
		munmap(w->marks, w->cap / 8 + 1);
	if (w->regions)
		munmap(w->regions, MAX_REGIONS * sizeof(struct region));
	if (w->buf)
		munmap(w->buf, CHUNK);
}

int mw_scan_run(struct mw_scan *scan, uint64_t budget_ms,
		mw_scan_progress_fn progress, void *arg)
{
	struct work w;
	uint64_t t0 = mw_monotonic_ms();
	size_t r;
	int ret;

	memset(scan, 0, sizeof(*scan));
	memset(&w, 0, sizeof(w));
	w.stack_lo = (uintptr_t)&w;
	w.pagemap = -1;
	/* room for blocks allocated while the snapshot is taken */
	w.cap = (size_t)mw_live_count() + (size_t)mw_live_count() / 8 + 1024;
	scan->nsites = mw_sites_count();
	scan->sites_len = (size_t)scan->nsites * sizeof(struct mw_scan_site);
	w.blocks = map(w.cap * sizeof(struct block));
	w.marks = map(w.cap / 8 + 1);
	w.regions = map(MAX_REGIONS * sizeof(struct region));
	w.buf = map(CHUNK);
	scan->sites = map(scan->sites_len);
	if (!w.blocks || !w.marks || !w.regions || !w.buf || !scan->sites) {
		unmap_work(&w);
		mw_scan_free(scan);
		return -ENOMEM;
	}
	mw_live_each(0, take_block, &w);
	scan->blocks = w.nblocks;
	ret = read_regions(&w);
	if (ret) {
		unmap_work(&w);
		mw_scan_free(scan);
		return ret;
	}
	for (r = 0; r < w.nregions; r++)
		scan->total_bytes += w.regions[r].end - w.regions[r].start;
	if (w.nblocks) {
		sort_blocks(w.blocks, w.nblocks);
		w.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		scan_regions(&w, scan, t0 + budget_ms, progress, arg);
		if (w.pagemap >= 0)
			close(w.pagemap);
	} else {
		scan->complete = 1;
	}
	tally(&w, scan);
	unmap_work(&w);
	scan->ms = mw_monotonic_ms() - t0;
	return 0;
}

void mw_scan_free(struct mw_scan *scan)
{
	if (scan->sites)
		munmap(scan->sites, scan->sites_len ? scan->sites_len : 1);
	memset(scan, 0, sizeof(*scan));
}
