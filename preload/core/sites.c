/* SPDX-License-Identifier: MIT */
/* sites.c - see sites.h */
#define _GNU_SOURCE
#include <urcu-bp.h>	/* before rculfhash.h: selects the bp flavour */
#include "core/sites.h"
#include "base/fmt.h"
#include "core/real.h"
#include "base/spin.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Records: MW_SITE_MAX / CHUNK chunks of CHUNK records, mapped on demand. */
#define CHUNK_SHIFT MW_SITE_CHUNK_SHIFT
#define CHUNK MW_SITE_CHUNK
struct mw_site *mw_site_chunks[MW_SITE_MAX / CHUNK];
#define chunks mw_site_chunks
/* Next free id; id 0 is never used.  Written under create_lock, read
 * anywhere with acquire ordering. */
uint32_t mw_site_next_id = 1;
#define next_id mw_site_next_id

/* Key strings: bump-allocated from mmap'd blocks, never freed.
 * Protected by create_lock. */
#define KEYS_BLOCK (1u << 20)
static char *keys_cur;
static size_t keys_left;
static uint64_t keys_mapped;

/* Serialises site creation (rare: once per new site). */
static int create_lock;
/* Held by whoever resizes the hash table (the helper, or a hook in
 * preload mode), so that a fork never copies liburcu's resize mutex
 * held. */
static int grow_lock;

/* Created once by mw_sites_init before tracking is enabled (published by
 * mw_track_enable's release store), never freed. */
static struct cds_lfht *table;
/* Sites the table could not create: atomic adds, relaxed reads. */
uint64_t mw_sites_dropped;

/* Ruby locations seen recently: (path pointer, line) -> site id, so the
 * common case neither hashes the path nor walks the hash table.  A hit is
 * verified against the site's own key (a path pointer can be reused for
 * another file after GC), so a stale or torn entry only costs a miss.
 * Written and read by threads holding the GVL; no lock needed for
 * correctness. */
#define LOC_CACHE_BITS 14
struct loc_cache_entry {
	const char *path;
	int line;
	uint32_t id;
};
static struct loc_cache_entry loc_cache[1u << LOC_CACHE_BITS];

/* Native callers seen recently (sites.h) */
struct mw_site *mw_addr_cache[1u << MW_ADDR_CACHE_BITS];

/* Buckets: created with MIN_BUCKETS, grown by us (never by a worker
 * of liburcu's: with CDS_LFHT_AUTO_RESIZE, cds_lfht_new starts one and
 * aborts the process when it cannot, as under a tight RLIMIT_AS or a
 * pids cgroup at its limit) up to max_buckets.  A maximum makes
 * liburcu reserve the whole bucket array as one PROT_NONE mapping at
 * creation and grow inside it, so growing never needs new address
 * space nor malloc (both would abort on failure: an assert, or
 * urcu_die). */
#define MIN_BUCKETS 1024ul
/* Grown from inside a hook only up to here: beyond it liburcu splits
 * the work among threads of its own, which only the helper may start. */
#define INLINE_BUCKETS 8192ul

static unsigned long buckets = MIN_BUCKETS;	/* grow_lock */
static unsigned long max_buckets;		/* set once, at creation */
static int helper_grows;	/* set once a helper calls grow_table */

/* A bucket per site (16 MiB of address space, touched as it grows);
 * under an address-space limit, a sixteenth of that: chains of up to
 * 16 sites at MW_SITE_MAX rather than an attach refused for want of
 * room. */
static unsigned long choose_max_buckets(void)
{
	struct rlimit rl;

	if (syscall(SYS_getrlimit, RLIMIT_AS, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY)
		return MW_SITE_MAX / 16;
	return MW_SITE_MAX;
}

/* What cds_lfht_new and this thread's urcu-bp registration will map
 * and allocate, tried first: liburcu aborts where we fail cleanly.
 * Only another thread mapping the last of the address space between
 * this probe and liburcu's own calls can still beat it. */
static int probe_memory(unsigned long nbuckets)
{
	size_t len = nbuckets * sizeof(struct cds_lfht_node) + (1u << 20);
	void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	void *p;

	if (m == MAP_FAILED)
		return -errno;
	munmap(m, len);
	/* the table's own struct and liburcu's small blocks: freed back
	 * into this thread's arena, where they will be found again */
	p = mw_real.calloc(1, 16384);
	if (!p)
		return -ENOMEM;
	mw_real.free(p);
	return 0;
}

int mw_sites_init(void)
{
	int ret;

	if (table)
		return 0;
	ret = mw_counts_init();
	if (ret)
		return ret;
	max_buckets = choose_max_buckets();
	ret = probe_memory(max_buckets);
	if (ret)
		return ret;
	/* Registered now, while its registry can be checked for room: the
	 * thread that grows the table takes a read lock, and urcu-bp
	 * registers a thread lazily and aborts when it cannot map its
	 * registry.  The only other readers are liburcu's resize threads
	 * (started by the helper, and only once their stacks could be
	 * mapped) and, preloaded, the few hooks that grow the table, which
	 * fit in the registry's first chunk (8 threads). */
	rcu_read_lock();
	rcu_read_unlock();
	table = cds_lfht_new(MIN_BUCKETS, MIN_BUCKETS, max_buckets, 0, NULL);
	return table ? 0 : -ENOMEM;
}

/* Grows to a bucket per site (at most @max); caller holds grow_lock. */
static void grow_locked(unsigned long max)
{
	unsigned long want = buckets;
	uint32_t n = mw_sites_count();

	while (want < n && want < max)
		want *= 2;
	if (want == buckets)
		return;
	cds_lfht_resize(table, want);
	__atomic_store_n(&buckets, want, __ATOMIC_RELAXED);
}

void mw_sites_grow_table(void)
{
	if (!table)
		return;
	__atomic_store_n(&helper_grows, 1, __ATOMIC_RELAXED);
	mw_spin_lock(&grow_lock);
	grow_locked(max_buckets);
	mw_spin_unlock(&grow_lock);
}

/* Preloaded, there is no helper: the thread that made a site beyond
 * the buckets grows the table, single-threaded, up to INLINE_BUCKETS.
 * Outside create_lock and any RCU read section. */
static void grow_inline(uint32_t n)
{
	if (__atomic_load_n(&helper_grows, __ATOMIC_RELAXED) ||
	    n <= __atomic_load_n(&buckets, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&buckets, __ATOMIC_RELAXED) >= INLINE_BUCKETS ||
	    __atomic_exchange_n(&grow_lock, 1, __ATOMIC_ACQUIRE))
		return;
	grow_locked(INLINE_BUCKETS);
	mw_spin_unlock(&grow_lock);
}

void mw_sites_fork_lock(void)
{
	mw_spin_lock(&grow_lock);	/* no resize holds liburcu's locks */
	urcu_bp_before_fork();		/* its grace-period and registry locks */
	mw_spin_lock(&create_lock);
}

void mw_sites_fork_unlock(int child)
{
	mw_spin_unlock(&create_lock);
	if (child)
		urcu_bp_after_fork_child();	/* forgets the other threads */
	else
		urcu_bp_after_fork_parent();
	mw_spin_unlock(&grow_lock);
}

uint64_t mw_sites_memory(void)
{
	uint32_t n = mw_sites_count();

	return ((uint64_t)(n + CHUNK - 1) / CHUNK) * CHUNK *
		       sizeof(struct mw_site) + keys_mapped + mw_counts_memory();
}

void mw_sites_reset(void)
{
	uint32_t id, n = mw_sites_count();

	for (id = 1; id < n; id++) {
		struct mw_site *s = mw_site_get(id);

		if (s)
			mw_counts_zero(&s->counts);
	}
}

/* 64-bit FNV-1a, then a final mix so that line numbers spread. */
static unsigned long hash_location(const char *path, size_t len, int line)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)path[i];
		h *= 0x100000001b3ull;
	}
	h ^= (uint64_t)(unsigned)line * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	return (unsigned long)(h * 0xbf58476d1ce4e5b9ull);
}

static unsigned long hash_addr(uintptr_t addr)
{
	uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ull;

	return (unsigned long)(h ^ (h >> 32));
}

/* What a lookup compares against. */
struct key {
	const char *path;	/* NULL for an address key */
	size_t pathlen;
	const char *stack;	/* NULL for a one-line site */
	size_t stacklen;
	int line;
	uintptr_t addr;
	char linebuf[12];
	size_t linelen;
};

static unsigned long key_location(struct key *k, const char *path,
				  size_t pathlen, int line)
{
	k->path = path;
	k->pathlen = pathlen;
	k->stack = NULL;
	k->stacklen = 0;
	k->line = line;
	k->addr = 0;
	k->linelen = mw_fmt_u64(k->linebuf, (uint64_t)(unsigned)line);
	return hash_location(path, pathlen, line);
}

/* A stack key: its innermost path:line, and the whole text. */
static unsigned long key_stack(struct key *k, const char *path,
			       size_t pathlen, int line, const char *text,
			       size_t textlen)
{
	uint64_t h = key_location(k, path, pathlen, line);
	size_t i;

	k->stack = text;
	k->stacklen = textlen;
	/* eight bytes a step: texts run to kilobytes */
	for (i = 0; i + 8 <= textlen; i += 8) {
		uint64_t w;

		memcpy(&w, text + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	for (; i < textlen; i++) {
		h ^= (unsigned char)text[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 31;
	return (unsigned long)(h * 0x94d049bb133111ebull);
}

static unsigned long key_addr(struct key *k, uintptr_t addr)
{
	k->path = NULL;
	k->pathlen = 0;
	k->stack = NULL;
	k->stacklen = 0;
	k->line = 0;
	k->addr = addr;
	k->linelen = 0;
	return hash_addr(addr);
}

static int match(struct cds_lfht_node *node, const void *arg)
{
	const struct mw_site *s = caa_container_of(node, struct mw_site, node);
	const struct key *k = arg;

	if (!k->path)
		return !s->key && s->addr == k->addr;
	if (k->stack ? !s->stack || s->stacklen != k->stacklen ||
			       memcmp(s->stack, k->stack, k->stacklen) :
		       s->stack != NULL)
		return 0;
	return s->key && s->keylen == k->pathlen + 1 + k->linelen &&
	       memcmp(s->key, k->path, k->pathlen) == 0 &&
	       s->key[k->pathlen] == ':' &&
	       memcmp(s->key + k->pathlen + 1, k->linebuf, k->linelen) == 0;
}

/* Copies the key string; caller holds create_lock. */
static char *keys_store_locked(const struct key *k)
{
	size_t need = k->pathlen + 1 + k->linelen + 1 +
		      (k->stack ? k->stacklen + 1 : 0);
	char *p;

	if (need > keys_left) {
		size_t size = need > KEYS_BLOCK ? need : KEYS_BLOCK;
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		keys_cur = m;
		keys_left = size;
		keys_mapped += size;
	}
	p = keys_cur;
	memcpy(p, k->path, k->pathlen);
	p[k->pathlen] = ':';
	memcpy(p + k->pathlen + 1, k->linebuf, k->linelen + 1);
	if (k->stack) {	/* after the key's NUL */
		char *t = p + k->pathlen + 1 + k->linelen + 1;

		memcpy(t, k->stack, k->stacklen);
		t[k->stacklen] = '\0';
	}
	keys_cur += need;
	keys_left -= need;
	return p;
}

/* Takes a fresh record; caller holds create_lock. */
static struct mw_site *site_new_locked(void)
{
	uint32_t id = next_id;
	struct mw_site **chunk = &chunks[id >> CHUNK_SHIFT];

	if (id >= MW_SITE_CODE)	/* the last ids are reserved */
		return NULL;
	if (!*chunk) {
		void *m = mmap(NULL, CHUNK * sizeof(struct mw_site),
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		__atomic_store_n(chunk, m, __ATOMIC_RELEASE);
	}
	(*chunk)[id & (CHUNK - 1)].id = id;
	return &(*chunk)[id & (CHUNK - 1)];
}

/* Lookups and adds run outside RCU read sections, though liburcu asks
 * for one: a read section only keeps removed nodes and shrunk bucket
 * arrays from being freed under a reader, and this table has neither
 * (records are never removed, it only grows, inside the bucket mapping
 * reserved at creation).  Without them a hook never makes urcu-bp
 * register its thread, which maps memory and aborts when it cannot. */
static struct mw_site *lookup(const struct key *k, unsigned long hash)
{
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	cds_lfht_lookup(table, hash, match, k, &iter);
	node = cds_lfht_iter_get_node(&iter);
	return node ? caa_container_of(node, struct mw_site, node) : NULL;
}

static struct mw_site *find_or_create(struct key *k, unsigned long hash)
{
	struct mw_site *s;
	uint32_t n = 0;

	s = lookup(k, hash);
	if (s)
		return s;

	mw_spin_lock(&create_lock);
	s = lookup(k, hash);
	if (!s) {
		s = site_new_locked();
		if (s && k->path) {
			s->key = keys_store_locked(k);
			if (!s->key) {
				s = NULL;
			} else {
				s->keylen = (uint32_t)strlen(s->key);
				if (k->stack) {
					s->stack = s->key + s->keylen + 1;
					s->stacklen = (uint32_t)k->stacklen;
				}
				s->pathlen = (uint32_t)k->pathlen;
				s->line = k->line;
			}
		} else if (s) {
			s->addr = k->addr;
		}
		if (s) {
			s->hash = hash;
			cds_lfht_node_init(&s->node);
			cds_lfht_add(table, hash, &s->node);
			/* publish the id only once the record is complete */
			n = s->id + 1;
			__atomic_store_n(&next_id, n, __ATOMIC_RELEASE);
		}
	}
	mw_spin_unlock(&create_lock);
	if (!s)
		__atomic_add_fetch(&mw_sites_dropped, 1, __ATOMIC_RELAXED);
	else if (n)
		grow_inline(n);
	return s;
}

static inline uint32_t loc_slot(const char *path, int line)
{
	uint64_t h = ((uint64_t)(uintptr_t)path ^ (uint64_t)(unsigned)line << 40) *
		     0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> (64 - LOC_CACHE_BITS));
}

struct mw_site *mw_site_for_location(const char *path, int line)
{
	struct loc_cache_entry *c = &loc_cache[loc_slot(path, line)];
	struct mw_site *s;
	struct key k;

	if (c->path == path && c->line == line) {
		s = mw_site_get(c->id);
		if (s && s->key && s->line == line &&
		    memcmp(s->key, path, s->pathlen) == 0 &&
		    path[s->pathlen] == '\0')
			return s;
	}
	s = find_or_create(&k, key_location(&k, path, strlen(path), line));
	if (s) {
		c->path = path;
		c->line = line;
		c->id = s->id;
	}
	return s;
}

static struct mw_site *find_only(struct key *k, unsigned long hash)
{
	if (!table)
		return NULL;
	return lookup(k, hash);
}

struct mw_site *mw_site_find_location(const char *path, size_t pathlen,
				      int line)
{
	struct key k;
	unsigned long hash = key_location(&k, path, pathlen, line);

	return find_only(&k, hash);
}

struct mw_site *mw_site_find_addr(uintptr_t addr)
{
	struct key k;
	unsigned long hash = key_addr(&k, addr);

	return find_only(&k, hash);
}

struct mw_site *mw_site_for_addr_miss(uintptr_t addr, struct mw_site **c)
{
	struct mw_site *s;
	struct key k;

	s = find_or_create(&k, key_addr(&k, addr));	/* a miss: the table */
	if (s)
		__atomic_store_n(c, s, __ATOMIC_RELEASE);
	return s;
}

struct mw_site *mw_site_for_stack_text(const char *path, int line,
				       const char *text, size_t len)
{
	struct key k;

	return find_or_create(&k, key_stack(&k, path, strlen(path), line,
					    text, len));
}
