/* SPDX-License-Identifier: MIT */
/* live.h - the live table: pointer -> (site id, size, birth) for every
 * block allocated while tracking.
 *
 * Blocks themselves are never changed (no headers), so a free of a
 * pointer the table does not know simply passes through: that is what
 * lets us attach late and detach.  The table is split into shards chosen
 * by pointer hash, each an open-addressing array with linear probing,
 * backward-shift deletion and its own spin lock, grown by mmap.
 */
#ifndef MW_LIVE_H
#define MW_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include <errno.h>

#include "base/spin.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

#define MW_LIVE_SIZE_MAX ((UINT64_C(1) << 39) - 1)
/* Set on a block whose free must be reported (see mw_live_watch). */
#define MW_LIVE_WATCHED (UINT64_C(1) << 39)
#define MW_LIVE_SITE_BITS 20	/* MW_SITE_MAX's (sites.h) */
#define MW_LIVE_PTR_BITS (64 - MW_LIVE_SITE_BITS)	/* ptr >> 4: 44 */
#define MW_BIRTH_BITS 24
#define MW_BIRTH_SHIFT (64 - MW_BIRTH_BITS)	/* above size and watched */
#define MW_BIRTH_MASK ((UINT64_C(1) << MW_BIRTH_BITS) - 1)

/* 16 bytes: a cache line holds four.  User-space pointers are below
 * 2^47 and 16-byte aligned, so ptr >> 4 fits in 44 bits. */
struct mw_live_entry {
	uint64_t key;		/* ptr >> 4, site id << 44; 0: empty slot */
	uint64_t size_birth;	/* size: low 39 bits, watched: bit 39,
				 * birth: high 24 */
};

/* Context: any; pure. */
static inline void mw_live_make(struct mw_live_entry *e, uintptr_t ptr,
				uint32_t site, uint64_t size, uint64_t birth)
{
	e->key = (uint64_t)ptr >> 4 | (uint64_t)site << MW_LIVE_PTR_BITS;
	e->size_birth = (size > MW_LIVE_SIZE_MAX ? MW_LIVE_SIZE_MAX : size) |
			(birth & MW_BIRTH_MASK) << MW_BIRTH_SHIFT;
}

/* Context: any; pure. */
static inline uintptr_t mw_live_ptr(const struct mw_live_entry *e)
{
	return (uintptr_t)(e->key & ((UINT64_C(1) << MW_LIVE_PTR_BITS) - 1))
	       << 4;
}

/* Context: any; pure. */
static inline uint64_t mw_live_size(const struct mw_live_entry *e)
{
	return e->size_birth & MW_LIVE_SIZE_MAX;
}

/* Context: any; pure. */
static inline int mw_live_watched(const struct mw_live_entry *e)
{
	return (e->size_birth & MW_LIVE_WATCHED) != 0;
}

/* Context: any; pure. */
static inline uint32_t mw_live_site(const struct mw_live_entry *e)
{
	return (uint32_t)(e->key >> MW_LIVE_PTR_BITS);
}

/* Birth, modulo 2^24 in the age clock's unit.  Context: any; pure. */
static inline uint64_t mw_live_birth(const struct mw_live_entry *e)
{
	return e->size_birth >> MW_BIRTH_SHIFT;
}

/* The shards, owned by live.c: here only for mw_live_prefetch. */
#define MW_LIVE_SHARD_BITS 8
struct mw_live_shard {
	int lock;
	uint32_t mask;		/* slots - 1, 0 before first use */
	uint64_t count;
	/* count at which an insert first grows the shard: (mask + 1) *
	 * MW_LIVE_LOAD_EIGHTHS / 8, 0 before first use */
	uint64_t limit;
	uint64_t unknown;	/* removes of pointers not in the table */
	uint64_t unknown_bytes;	/* their usable sizes */
	struct mw_live_entry *slots;
} __attribute__((aligned(64)));
extern struct mw_live_shard mw_live_shards[1u << MW_LIVE_SHARD_BITS];

/* The shard is chosen by the 1 MiB region a block lies in, not by the
 * pointer's own hash: glibc gives each thread its own arena, so threads
 * mostly lock and write shards of their own instead of trading every
 * shard's line between cores.  A region holds at most 32Ki blocks, and
 * a large heap spans many regions, so shards stay balanced. */
#define MW_LIVE_REGION_SHIFT 20

/* Context: any; pure. */
static inline struct mw_live_shard *mw_live_shard_of(uintptr_t ptr)
{
	uint64_t r = (uint64_t)(ptr >> MW_LIVE_REGION_SHIFT) *
		     0x9e3779b97f4a7c15ull;
	struct mw_live_shard *sh =
		&mw_live_shards[r >> (64 - MW_LIVE_SHARD_BITS)];

	/* opaque from here on: the compiler keeps the shard's address in
	 * a register, instead of rebuilding it from the index at each use
	 * and spilling the index across calls */
	__asm__("" : "+r"(sh));
	return sh;
}

/* A pointer's hash (malloc pointers are 16-byte aligned: the zero bits
 * are dropped) and its home slot in a shard of @mask + 1 slots.
 * Context: any; pure. */
static inline uint64_t mw_live_mix(uintptr_t ptr)
{
	return (uint64_t)(ptr >> 4) * 0x9e3779b97f4a7c15ull;
}

static inline uint32_t mw_live_home(uint64_t h, uint32_t mask)
{
	return (uint32_t)(h >> 16) & mask;
}

/* Where @ptr's entry goes: its shard, its hash and its key bits
 * (ptr >> 4), computed once for the prefetch and the insert or remove
 * that follows.  Context: any; pure. */
struct mw_live_at {
	struct mw_live_shard *sh;
	uint64_t h;
	uint64_t k;
};

static inline struct mw_live_at mw_live_at(uintptr_t ptr)
{
	struct mw_live_at at = { mw_live_shard_of(ptr), mw_live_mix(ptr),
				 (uint64_t)ptr >> 4 };

	return at;
}

/* Starts loading the slot @at's pointer would go to, so that a later
 * insert or remove finds it in cache.  Context: hook-safe; never
 * faults. */
static inline void mw_live_prefetch_at(const struct mw_live_at *at)
{
	/* unlocked reads: a stale answer only prefetches the wrong line */
	struct mw_live_entry *slots = __atomic_load_n(&at->sh->slots,
						      __ATOMIC_RELAXED);
	uint32_t mask = __atomic_load_n(&at->sh->mask, __ATOMIC_RELAXED);

	if (slots)
		__builtin_prefetch(&slots[mw_live_home(at->h, mask)], 1);
}

/* mw_live_prefetch_at for @ptr.  Context: as mw_live_prefetch_at. */
static inline void mw_live_prefetch(uintptr_t ptr)
{
	struct mw_live_at at = mw_live_at(ptr);

	mw_live_prefetch_at(&at);
}

/* Watches the block at @ptr: its entry, or a new one of @marker_site
 * and @size (the block's, known to the caller) when it has none, gets
 * MW_LIVE_WATCHED, which its removal hands back.  Returns 0 when the
 * block had an entry, 1 when the marker was made, -ENOMEM when the table
 * cannot grow.  Context: hook-safe. */
int mw_live_watch(uintptr_t ptr, uint64_t size, uint32_t marker_site);

/* Counts a free of a block not in the table, of @bytes (its usable
 * size), made some other way than mw_live_remove (realloc).
 * Context: hook-safe. */
void mw_live_add_unknown(uintptr_t ptr, uint64_t bytes);

/* Calls @fn on a copy of every entry (of one site when @site != 0),
 * outside the shard locks, so @fn may allocate.  Entries moved by a
 * concurrent resize may be missed or seen twice.
 * Context: not a hook. */
void mw_live_each(uint32_t site,
		  void (*fn)(const struct mw_live_entry *e, void *arg),
		  void *arg);

/* Empties the table but for the entries of site @keep (0: none): blocks
 * recorded so far become unknown, so their frees are no longer counted.
 * Context: not a hook. */
void mw_live_clear(uint32_t keep);

/* Every shard's lock, taken before fork and released after it, in the
 * parent and in the child (see fork.h).  Context: atfork handlers. */
void mw_live_fork_lock(void);
void mw_live_fork_unlock(void);

/* Entries held now, and bytes of memory mapped for the table.
 * Context: any; lock-free reads. */
uint64_t mw_live_count(void);
/* Context: any; lock-free reads. */
uint64_t mw_live_memory(void);
/* Removes of pointers the table did not hold (frees of blocks allocated
 * before tracking began, or never seen).  Context: any; lock-free reads. */
uint64_t mw_live_unknown(void);
/* Their bytes, as the allocator's usable size reported them (0 for an
 * allocator without malloc_usable_size).  Context: any; lock-free reads. */
uint64_t mw_live_unknown_bytes(void);

/* Inserts that failed for lack of memory. */
extern uint64_t mw_live_dropped;

/* The hot operations, inline so that a hook's insert and remove cost no
 * calls; what is rare (growing a shard, an unknown pointer) stays out
 * of line in live.c. */

/* Doubles @sh (or creates it), returns 0 or -ENOMEM.  Caller holds its
 * lock.  Context: hook-safe (mmap, never malloc). */
int mw_live_grow_locked(struct mw_live_shard *sh);
/* Counts the remove of @ptr, not in the table, with its usable size.
 * Caller holds the lock of @ptr's shard.  Context: hook-safe. */
void mw_live_unknown_locked(struct mw_live_shard *sh, uintptr_t ptr);

/* The most a shard is filled, in eighths.  A free's backward shift scans
 * to the end of its probe run, whose length grows as 1 / (1 - load)^2:
 * at 3/4, 72 of the 313 instructions the tracer added per malloc-family
 * call of churn.rb; at 5/8, 41 (and the insert's probe 54 -> 43), for
 * 16 / 0.47 against 16 / 0.56 bytes of table per live block on average.
 * (Fibonacci hashing, the product's top bits, clustered more here.) */
#define MW_LIVE_LOAD_EIGHTHS 5
/* Makes room for one more entry: keeps the load factor at or below
 * MW_LIVE_LOAD_EIGHTHS / 8;
 * if growing fails, a table with an empty slot left just runs fuller.
 * Returns 0, or -ENOMEM (counted as dropped).  Caller holds the lock. */
static inline int mw_live_reserve_locked(struct mw_live_shard *sh)
{
	if (__builtin_expect(sh->count >= sh->limit, 0) &&
	    mw_live_grow_locked(sh) && sh->count + 1 > sh->mask) {
		__atomic_add_fetch(&mw_live_dropped, 1, __ATOMIC_RELAXED);
		return -ENOMEM;
	}
	return 0;
}

/* Whether entry key @key is that of the pointer whose ptr >> 4 is @k.
 * Context: any; pure. */
static inline int mw_live_key_is(uint64_t key, uint64_t k)
{
	return (key & ((UINT64_C(1) << MW_LIVE_PTR_BITS) - 1)) == k;
}

/* The slot holding @at's pointer, or the empty slot that ends its probe
 * run.  Caller holds the lock of a shard in use (mask != 0). */
static inline uint32_t mw_live_probe_locked(const struct mw_live_at *at)
{
	const struct mw_live_entry *s = at->sh->slots;
	uint32_t mask = at->sh->mask, i;

	for (i = mw_live_home(at->h, mask);
	     s[i].key && !mw_live_key_is(s[i].key, at->k); i = (i + 1) & mask)
		;
	return i;
}

/* Records @e, whose pointer @at was made for (mw_live_at(mw_live_ptr(@e))).
 * If the pointer is already present (its free was never seen, e.g. made
 * through a pointer to free captured before attach), the old entry is
 * replaced and returned in *@stale with 1; else returns 0.  Returns
 * -ENOMEM when the table cannot grow (nothing recorded).
 * Context: hook-safe with the recursion guard raised. */
static inline __attribute__((always_inline)) int
mw_live_insert_at(const struct mw_live_at *at, const struct mw_live_entry *e,
		  struct mw_live_entry *stale)
{
	struct mw_live_shard *sh = at->sh;
	uint32_t i;
	int ret = 0;

	mw_spin_lock(&sh->lock);
	if (mw_live_reserve_locked(sh)) {
		mw_spin_unlock(&sh->lock);
		return -ENOMEM;
	}
	i = mw_live_probe_locked(at);
	if (sh->slots[i].key) {
		*stale = sh->slots[i];
		ret = 1;
	} else {
		sh->count++;
	}
	sh->slots[i] = *e;
	mw_spin_unlock(&sh->lock);
	return ret;
}

/* mw_live_insert_at, its place found here.  Context: as
 * mw_live_insert_at. */
static inline __attribute__((always_inline)) int
mw_live_insert(const struct mw_live_entry *e, struct mw_live_entry *stale)
{
	struct mw_live_at at = mw_live_at(mw_live_ptr(e));

	return mw_live_insert_at(&at, e, stale);
}

/* mw_live_remove and mw_live_take: @count_unknown says which. */
static inline __attribute__((always_inline)) int
mw_live_remove_entry(uintptr_t ptr, struct mw_live_entry *out,
		     int count_unknown)
{
	uint64_t h = mw_live_mix(ptr), k = (uint64_t)ptr >> 4;
	struct mw_live_shard *sh = mw_live_shard_of(ptr);
	struct mw_live_entry *s;
	uint32_t i, j, mask;

	mw_spin_lock(&sh->lock);
	mask = sh->mask;
	s = sh->slots;
	if (!mask) {
		if (count_unknown)
			mw_live_unknown_locked(sh, ptr);
		mw_spin_unlock(&sh->lock);
		return 0;
	}
	for (i = mw_live_home(h, mask); !mw_live_key_is(s[i].key, k);
	     i = (i + 1) & mask) {
		if (!s[i].key) {
			if (count_unknown)
				mw_live_unknown_locked(sh, ptr);
			mw_spin_unlock(&sh->lock);
			return 0;
		}
	}
	*out = s[i];
	/* backward-shift deletion: pull later members of the probe run
	 * into the hole when their home position allows it */
	for (j = (i + 1) & mask; s[j].key; j = (j + 1) & mask) {
		uint32_t k = mw_live_home(mw_live_mix(mw_live_ptr(&s[j])), mask);

		/* move s[j] to i unless its home lies cyclically in (i, j]:
		 * when it sits at least as far from home as from the hole */
		if (((j - k) & mask) >= ((j - i) & mask)) {
			s[i] = s[j];
			i = j;
		}
	}
	s[i].key = 0;
	sh->count--;
	mw_spin_unlock(&sh->lock);
	return 1;
}

/* Removes @ptr; copies its entry to *@out and returns 1, or returns 0 if
 * the pointer is unknown, counting it with the allocator's usable size
 * (so @ptr must still be allocated).  Context: as mw_live_insert. */
static inline __attribute__((always_inline)) int
mw_live_remove(uintptr_t ptr, struct mw_live_entry *out)
{
	return mw_live_remove_entry(ptr, out, 1);
}

/* As mw_live_remove, but a pointer not found is not counted as an
 * unknown free (for lookups that may well miss).  Context: hook. */
static inline int mw_live_take(uintptr_t ptr, struct mw_live_entry *out)
{
	return mw_live_remove_entry(ptr, out, 0);
}

#pragma GCC visibility pop

#endif
