/* SPDX-License-Identifier: MIT */
/* live.c - see live.h */
#define _GNU_SOURCE
#include "core/live.h"
#include "core/real.h"
#include "base/spin.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define SHARD_BITS MW_LIVE_SHARD_BITS
#define NSHARDS (1u << SHARD_BITS)
#define INITIAL_SLOTS 256u	/* per shard, on first use */

/* Each field but the lock is protected by the shard's lock. */
#define shard mw_live_shard
struct shard mw_live_shards[NSHARDS];
#define shards mw_live_shards
/* Entries a full table could not take: atomic adds by hooks, relaxed
 * reads by readers. */
uint64_t mw_live_dropped;

#define mix mw_live_mix
#define shard_of mw_live_shard_of
#define reserve_locked mw_live_reserve_locked
#define probe_locked mw_live_probe_locked
#define grow_locked mw_live_grow_locked

#define home mw_live_home

/* @n slots; @populate: every page is about to be written (a grow's
 * rehash spreads the entries over all of them), so the kernel fills them
 * in the mmap itself: one syscall instead of one page fault per 4 KiB
 * (churn.rb's work phase on Ruby 3.1: ~220 of its ~480 faults). */
static struct mw_live_entry *map_slots(uint32_t n, int populate)
{
	void *m = mmap(NULL, (size_t)n * sizeof(struct mw_live_entry),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		       (populate ? MAP_POPULATE : 0), -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/* Doubles the shard (or creates it); caller holds its lock.  Out of
 * line: once per doubling. */
__attribute__((noinline, cold)) int mw_live_grow_locked(struct shard *sh)
{
	uint32_t old_n = sh->mask ? sh->mask + 1 : 0;
	uint32_t n = old_n ? old_n * 2 : INITIAL_SLOTS;
	struct mw_live_entry *slots, *old = sh->slots;
	uint32_t i;

	if (n == 0 || n > (1u << 31))
		return -ENOMEM;
	slots = map_slots(n, 1);
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < old_n; i++) {
		uint32_t j;

		if (!old[i].key)
			continue;
		j = home(mix(mw_live_ptr(&old[i])), n - 1);
		while (slots[j].key)
			j = (j + 1) & (n - 1);
		slots[j] = old[i];
	}
	sh->slots = slots;
	sh->mask = n - 1;
	sh->limit = (uint64_t)n * MW_LIVE_LOAD_EIGHTHS / 8;
	if (old)
		munmap(old, (size_t)old_n * sizeof(struct mw_live_entry));
	return 0;
}

int mw_live_watch(uintptr_t ptr, uint64_t size, uint32_t marker_site)
{
	struct mw_live_at at = mw_live_at(ptr);
	struct shard *sh = at.sh;
	uint32_t i;

	mw_spin_lock(&sh->lock);
	if (sh->mask) {
		i = probe_locked(&at);
		if (sh->slots[i].key) {
			sh->slots[i].size_birth |= MW_LIVE_WATCHED;
			mw_spin_unlock(&sh->lock);
			return 0;
		}
	}
	if (reserve_locked(sh)) {
		mw_spin_unlock(&sh->lock);
		return -ENOMEM;
	}
	i = probe_locked(&at);	/* the table may have grown */
	mw_live_make(&sh->slots[i], ptr, marker_site, size, 0);
	sh->slots[i].size_birth |= MW_LIVE_WATCHED;
	sh->count++;
	mw_spin_unlock(&sh->lock);
	return 1;
}

/* A free of a pointer the table does not hold (a block from before
 * tracking began): counted with its usable size, asked while the block
 * still exists.  Under the lock, whose line is ours already, so no
 * atomic is needed; out of line, off the path of tracked blocks. */
__attribute__((noinline, cold)) void
mw_live_unknown_locked(struct shard *sh, uintptr_t ptr)
{
	uint64_t bytes = mw_real.malloc_usable_size ?
			 mw_real.malloc_usable_size((void *)ptr) : 0;

	sh->unknown++;
	/* read without the lock by mw_live_unknown_bytes */
	__atomic_store_n(&sh->unknown_bytes, sh->unknown_bytes + bytes,
			 __ATOMIC_RELAXED);
}

void mw_live_add_unknown(uintptr_t ptr, uint64_t bytes)
{
	struct shard *sh = shard_of(ptr);

	mw_spin_lock(&sh->lock);
	sh->unknown++;
	__atomic_store_n(&sh->unknown_bytes, sh->unknown_bytes + bytes,
			 __ATOMIC_RELAXED);
	mw_spin_unlock(&sh->lock);
}

void mw_live_each(uint32_t site,
		  void (*fn)(const struct mw_live_entry *e, void *arg),
		  void *arg)
{
	struct mw_live_entry batch[128];
	unsigned s;

	for (s = 0; s < NSHARDS; s++) {
		struct shard *sh = &shards[s];
		uint32_t pos = 0;

		for (;;) {
			unsigned n = 0, k;
			int done = 0;

			mw_spin_lock(&sh->lock);
			while (n < 128) {
				const struct mw_live_entry *e;

				if (!sh->mask || pos > sh->mask) {
					done = 1;
					break;
				}
				e = &sh->slots[pos++];
				if (e->key && (!site || mw_live_site(e) == site))
					batch[n++] = *e;
			}
			mw_spin_unlock(&sh->lock);
			for (k = 0; k < n; k++)
				fn(&batch[k], arg);
			if (done)
				break;
		}
	}
}

void mw_live_clear(uint32_t keep)
{
	unsigned s;

	for (s = 0; s < NSHARDS; s++) {
		struct shard *sh = &shards[s];
		uint32_t n, i, j;
		struct mw_live_entry *slots;

		mw_spin_lock(&sh->lock);
		n = sh->mask ? sh->mask + 1 : 0;
		/* sparse (heap pages only): pages fault in as used */
		slots = n && keep ? map_slots(n, 0) : NULL;
		if (slots) {		/* rebuild with the kept entries only */
			sh->count = 0;
			for (i = 0; i < n; i++) {
				if (!sh->slots[i].key ||
				    mw_live_site(&sh->slots[i]) != keep)
					continue;
				j = home(mix(mw_live_ptr(&sh->slots[i])),
					 sh->mask);
				while (slots[j].key)
					j = (j + 1) & sh->mask;
				slots[j] = sh->slots[i];
				sh->count++;
			}
			munmap(sh->slots, (size_t)n * sizeof(*slots));
			sh->slots = slots;
		} else {
			if (n)
				memset(sh->slots, 0, (size_t)n * sizeof(*slots));
			sh->count = 0;
		}
		sh->unknown = 0;
		__atomic_store_n(&sh->unknown_bytes, 0, __ATOMIC_RELAXED);
		mw_spin_unlock(&sh->lock);
	}
}

void mw_live_fork_lock(void)
{
	unsigned s;

	for (s = 0; s < NSHARDS; s++)
		mw_spin_lock(&shards[s].lock);
}

void mw_live_fork_unlock(void)
{
	unsigned s;

	for (s = 0; s < NSHARDS; s++)
		mw_spin_unlock(&shards[s].lock);
}

/* The sum over the shards of the counter at @off in struct shard. */
static uint64_t sum_shards(size_t off)
{
	uint64_t n = 0;
	unsigned s;

	for (s = 0; s < NSHARDS; s++)
		n += __atomic_load_n((const uint64_t *)((const char *)&shards[s] +
							off), __ATOMIC_RELAXED);
	return n;
}

uint64_t mw_live_count(void)
{
	return sum_shards(offsetof(struct shard, count));
}

uint64_t mw_live_unknown(void)
{
	return sum_shards(offsetof(struct shard, unknown));
}

uint64_t mw_live_unknown_bytes(void)
{
	return sum_shards(offsetof(struct shard, unknown_bytes));
}

uint64_t mw_live_memory(void)
{
	uint64_t n = 0;
	unsigned s;

	for (s = 0; s < NSHARDS; s++) {
		uint32_t mask = __atomic_load_n(&shards[s].mask,
						__ATOMIC_RELAXED);

		if (mask)
			n += ((uint64_t)mask + 1) * sizeof(struct mw_live_entry);
	}
	return n;
}
