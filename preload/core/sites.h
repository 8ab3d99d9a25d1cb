/* SPDX-License-Identifier: MIT */
/* sites.h - one record per allocation call site.
 *
 * A site is keyed by a Ruby source location ("path:line") or, outside
 * Ruby, by the caller's return address.  Records live in mmap'd chunks
 * indexed by a 20-bit id (the live table stores ids, not pointers), are
 * found through a liburcu lock-free hash table (urcu-bp flavour: no
 * thread registration, fork-tolerant), and are never freed: a reset only
 * zeroes their counters.
 */
#ifndef MW_SITES_H
#define MW_SITES_H

#include <stdint.h>
#include <urcu/rculfhash.h>

#include "core/counts.h"
#include "core/rbpos.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

#define MW_SITE_MAX (1u << 20)	/* ids 1 .. MW_SITE_MAX-1 (live.h packs 20 bits) */
/* Reserved ids, never a real site, so never in a site dump: */
/* the live table's markers of watched Ruby code buffers
 * (mw_site_remember_pos) */
#define MW_SITE_CODE (MW_SITE_MAX - 2)
/* Ruby heap page bodies (hook/rbheap.h), kept in the live table */
#define MW_SITE_HEAP_PAGES (MW_SITE_MAX - 1)

struct mw_site {
	struct cds_lfht_node node;
	struct mw_site_counts counts;
	/* Key: immutable once published. */
	unsigned long hash;
	uintptr_t addr;		/* caller address when key == NULL */
	const char *key;	/* "path:line", NUL-terminated, or NULL */
	/* --stacks: "path:line in label" per Ruby frame, innermost first
	 * (its first frame's path:line is @key), '\n' between frames,
	 * NUL-terminated; NULL for a one-line site */
	const char *stack;
	uint32_t stacklen;	/* strlen(stack) */
	/* stack_sample: the id of the one-line site whose exact counts
	 * every block counted here also has (set once, by the first
	 * allocation sampled here; 0 before) */
	uint32_t line_id;
	uint32_t keylen;	/* strlen(key) */
	uint32_t pathlen;	/* bytes of key before ':' */
	int line;
	uint32_t id;
};

/* Native callers seen recently: caller address -> site, for threads
 * without the GVL (no Ruby location), which would otherwise walk the
 * hash table on every allocation.  An entry is one pointer to a site
 * keyed by an address (or NULL), so it cannot be torn; a hit is a site
 * whose own address is the caller's, a check that also rejects a site
 * another caller put there.  Any thread writes it, with release
 * ordering, and it is loaded with acquire ordering, so a site seen is a
 * complete record.  64 KiB, as when an entry held the address too:
 * twice the entries in the same memory.  Owned by sites.c; read here by
 * mw_site_for_addr. */
#define MW_ADDR_CACHE_BITS 13
extern struct mw_site *mw_addr_cache[1u << MW_ADDR_CACHE_BITS];

/* mw_site_for_addr's miss: the table, then the cache entry @c.
 * Context: as mw_site_for_addr. */
struct mw_site *mw_site_for_addr_miss(uintptr_t addr, struct mw_site **c);

/* a - b, clamped at 0: counters are read while hooks update them, so
 * a difference of two of them can be caught mid-update.
 * Context: any; pure. */
static inline uint64_t mw_sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Creates the table, after checking that the memory liburcu will take
 * for it can be had (liburcu aborts where we return).  Returns 0, or
 * -ENOMEM (-errno) with nothing created.  Idempotent.
 * Context: not a hook; starts no thread.  Registers the calling thread
 * with urcu-bp: call it from the thread that will grow the table. */
int mw_sites_init(void);

/* Finds or creates the site for a Ruby location / a caller address.
 * Returns NULL when the table is full or out of memory (counted in
 * mw_sites_dropped).
 * Context: hook-safe; the calling thread must have its recursion guard
 * raised.  Never enters an RCU read section, except that in preload mode
 * the thread whose new site outgrows the buckets grows them (up to 8192,
 * single-threaded). */
struct mw_site *mw_site_for_location(const char *path, int line);
static inline struct mw_site *mw_site_for_addr(uintptr_t addr);

/* --stacks: finds or creates the site of a stack named @text (@len
 * bytes, see struct mw_site's stack), whose innermost frame is
 * @path:@line.  Returns NULL when the table is full or out of memory.
 * Context: as mw_site_for_location (core/stacks.c's caller). */
struct mw_site *mw_site_for_stack_text(const char *path, int line,
				       const char *text, size_t len);

/* Finds an existing site without creating one; NULL if absent.
 * A location finds only the one-line site, never a stack's.
 * Context: not a hook. */
struct mw_site *mw_site_find_location(const char *path, size_t pathlen,
				      int line);
struct mw_site *mw_site_find_addr(uintptr_t addr);

/* Grows the hash table to a bucket per site (up to MW_SITE_MAX, or a
 * sixteenth of it under an address-space limit).
 * The table is made without CDS_LFHT_AUTO_RESIZE: liburcu's resize
 * worker is a thread whose creation aborts the process when it fails
 * (a tight RLIMIT_AS, a pids cgroup at its limit).  liburcu may start
 * threads of its own for a large step and falls back to this one when
 * it cannot.  Context: the helper thread (the one that called
 * mw_sites_init); not a hook; outside RCU read sections. */
void mw_sites_grow_table(void);

/* Around fork (see fork.h): takes liburcu's locks and ours, in that
 * order, and releases them in the parent or the child (@child set).
 * Context: pthread_atfork handlers only. */
void mw_sites_fork_lock(void);
void mw_sites_fork_unlock(int child);

/* Records: chunks of MW_SITE_CHUNK, mapped on demand and published
 * with a release store; the next free id, stored with release ordering
 * once its record is complete.  Owned by sites.c; read here only by
 * the two inline functions below. */
#define MW_SITE_CHUNK_SHIFT 12
#define MW_SITE_CHUNK (1u << MW_SITE_CHUNK_SHIFT)
extern struct mw_site *mw_site_chunks[MW_SITE_MAX / MW_SITE_CHUNK];
extern uint32_t mw_site_next_id;

/* Number of ids handed out so far (ids 1 .. n-1 exist).
 * Context: any; never allocates. */
static inline uint32_t mw_sites_count(void)
{
	return __atomic_load_n(&mw_site_next_id, __ATOMIC_ACQUIRE);
}

/* The site with this id, or NULL if there is none (yet).
 * Context: any, hooks included; never allocates. */
static inline struct mw_site *mw_site_get(uint32_t id)
{
	struct mw_site *chunk;

	if (id - 1 >= mw_sites_count() - 1)	/* id 0 wraps: also out */
		return NULL;
	chunk = __atomic_load_n(&mw_site_chunks[id >> MW_SITE_CHUNK_SHIFT],
				__ATOMIC_ACQUIRE);
	return chunk ? &chunk[id & (MW_SITE_CHUNK - 1)] : NULL;
}

/* Zeroes every site's counters.  Not atomic with concurrent hooks.
 * Context: not a hook. */
void mw_sites_reset(void);

/* Allocations whose site could not be recorded. */
extern uint64_t mw_sites_dropped;

/* Bytes of memory the site table holds (records, keys and hot sites'
 * stripes; hash buckets excluded).  Context: any; never allocates. */
uint64_t mw_sites_memory(void);

static inline struct mw_site *mw_site_for_addr(uintptr_t addr)
{
	/* the product's top bits: a cache slot needs no more mixing */
	struct mw_site **c = &mw_addr_cache[(uint64_t)addr *
					    0x9e3779b97f4a7c15ull >>
					    (64 - MW_ADDR_CACHE_BITS)];
	struct mw_site *s = __atomic_load_n(c, __ATOMIC_ACQUIRE);

	if (s && s->addr == addr)
		return s;
	return mw_site_for_addr_miss(addr, c);
}

#pragma GCC visibility pop

#endif
