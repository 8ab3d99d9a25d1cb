/* SPDX-License-Identifier: MIT */
/* Unit tests for the live table (preload/core/live.c), against live.h's
 * contracts: insert/replace/remove/take, unknown removes counted with the
 * allocator's usable size, the watch bit, clear, growth, a full table
 * that cannot grow, long probe runs of colliding hashes (wrapping past
 * the end of a shard's array), and a random run checked against a model
 * (threads at once: test_live_threads.c).
 *
 * The pointers are made up (the table never touches a block): each test
 * takes 1 MiB regions of its own, and, where it matters, regions whose
 * shard nothing else used (live_fixture.h copies live.c's choice). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "live_fixture.h"
#include "tap.h"

static void test_entry_packing(void)
{
	struct mw_live_entry e = mk((uintptr_t)0x7ffff7a01230, 0xfffff,
				    MW_LIVE_SIZE_MAX + 5, (UINT64_C(1) << 30) + 3);

	ok(mw_live_ptr(&e) == 0x7ffff7a01230 && mw_live_site(&e) == 0xfffff,
	   "entry keeps a 47-bit pointer and a 20-bit site");
	ok(mw_live_size(&e) == MW_LIVE_SIZE_MAX && !mw_live_watched(&e),
	   "sizes above 2^39-1 clamp to MW_LIVE_SIZE_MAX, not into the watch bit");
	ok(mw_live_birth(&e) == 3, "birth kept modulo 2^24");
}

static void test_insert_remove(void)
{
	uintptr_t base = region(1), p = base + 0x40;
	struct mw_live_entry e = mk(p, 3, 1000, 42), stale, out;
	uint64_t count0 = mw_live_count();
	struct census c;

	ok(mw_live_insert(&e, &stale) == 0 && mw_live_count() == count0 + 1,
	   "insert a new pointer: 0, one more entry");
	c = census(3);
	ok(c.n == 1 && c.bytes == 1000, "each(site) sees it with its size");
	e = mk(p, 4, 2000, 43);
	memset(&stale, 0, sizeof(stale));
	ok(mw_live_insert(&e, &stale) == 1 && mw_live_site(&stale) == 3 &&
		   mw_live_size(&stale) == 1000 && mw_live_birth(&stale) == 42 &&
		   mw_live_count() == count0 + 1,
	   "insert of a present pointer replaces it, returns 1 and the stale entry");
	ok(census(3).n == 0 && census(4).n == 1, "the replacement is what is held");
	ok(mw_live_remove(p, &out) == 1 && mw_live_ptr(&out) == p &&
		   mw_live_site(&out) == 4 && mw_live_size(&out) == 2000 &&
		   mw_live_birth(&out) == 43 && mw_live_count() == count0,
	   "remove hands back the entry and drops it");
	ok(census(4).n == 0, "removed entry is gone from each()");
	ok(insert(p, 5, 10) == 0 && mw_live_take(p, &out) == 1 &&
		   mw_live_size(&out) == 10 && mw_live_count() == count0,
	   "take removes a present entry like remove");
}

static void test_unknown(void)
{
	uintptr_t fresh = region(1), used = region(1);
	uint64_t u0 = mw_live_unknown(), b0 = mw_live_unknown_bytes();
	struct mw_live_entry out;

	mw_real.malloc_usable_size = fake_usable_size;
	ok(mw_live_remove(fresh + 0x100, &out) == 0,
	   "remove in a shard never used: 0");
	ok(mw_live_unknown() == u0 + 1 &&
		   mw_live_unknown_bytes() == b0 + usable_of(fresh + 0x100),
	   "... counted as unknown with its usable size");
	insert(used + 0x10, 9, 1);
	ok(mw_live_remove(used + 0x20, &out) == 0 &&
		   mw_live_unknown() == u0 + 2 &&
		   mw_live_unknown_bytes() == b0 + usable_of(fresh + 0x100) +
						 usable_of(used + 0x20),
	   "remove of an unknown pointer in a shard in use: counted too");
	ok(mw_live_take(used + 0x30, &out) == 0 && mw_live_unknown() == u0 + 2,
	   "take of an unknown pointer is not counted");
	mw_live_add_unknown(used + 0x40, 12345);
	ok(mw_live_unknown() == u0 + 3 &&
		   mw_live_unknown_bytes() == b0 + usable_of(fresh + 0x100) +
						 usable_of(used + 0x20) + 12345,
	   "add_unknown counts one free of the given bytes");
	mw_real.malloc_usable_size = NULL;
	ok(mw_live_remove(used + 0x50, &out) == 0 &&
		   mw_live_unknown() == u0 + 4 &&
		   mw_live_unknown_bytes() == b0 + usable_of(fresh + 0x100) +
						 usable_of(used + 0x20) + 12345,
	   "without malloc_usable_size an unknown free counts 0 bytes");
	mw_real.malloc_usable_size = fake_usable_size;
	ok(mw_live_remove(used + 0x10, &out) == 1 && mw_live_site(&out) == 9,
	   "the known entry beside them is intact");
}

static void test_watch(void)
{
	uintptr_t base = region(0), p = base + 0x1000, q = base + 0x2000;
	struct mw_live_entry out, stale, e;
	uint64_t count0 = mw_live_count();

	mw_live_prefetch(p);		/* before the shard exists: no fault */
	insert(p, 11, 777);
	mw_live_prefetch(p);
	ok(mw_live_watch(p, 4096, 99) == 0 && mw_live_count() == count0 + 1,
	   "watch of a known block: 0, no new entry");
	ok(mw_live_watch(p, 4096, 99) == 0, "watching twice is harmless");
	ok(mw_live_remove(p, &out) == 1 && mw_live_watched(&out) &&
		   mw_live_size(&out) == 777 && mw_live_site(&out) == 11,
	   "its removal hands back the watch bit, size and site unchanged");
	ok(mw_live_watch(q, 4096, 99) == 1 && mw_live_count() == count0 + 1,
	   "watch of an unknown block makes a marker entry: 1");
	ok(census(99).n == 1 && census(99).bytes == 4096,
	   "the marker: site 99, the size the caller knows");
	e = mk(q, 12, 64, 1);
	ok(mw_live_insert(&e, &stale) == 1 && mw_live_watched(&stale) &&
		   mw_live_site(&stale) == 99,
	   "an insert over a marker returns it as stale, watched");
	ok(mw_live_remove(q, &out) == 1 && !mw_live_watched(&out) &&
		   mw_live_count() == count0,
	   "the new entry replaced the marker and is not watched");
}

static void test_clear(void)
{
	uintptr_t base = region(0);
	struct mw_live_entry out;
	uint64_t b;
	int i, back = 0;

	for (i = 0; i < 300; i++)
		insert(base + 16 * (uintptr_t)i, i % 3 ? 21 : 22, 5);
	mw_live_remove(base + 0x80000, &out);	/* one unknown */
	ok(mw_live_count() >= 300 && mw_live_unknown() > 0, "300 entries in");
	mw_live_clear(22);
	ok(mw_live_count() == 100 && census(22).n == 100 && census(21).n == 0,
	   "clear(keep) leaves only the kept site's entries");
	ok(mw_live_unknown() == 0 && mw_live_unknown_bytes() == 0,
	   "clear resets the unknown counts");
	for (i = 0; i < 300; i += 3)
		back += mw_live_remove(base + 16 * (uintptr_t)i, &out) == 1 &&
			mw_live_site(&out) == 22;
	ok(back == 100 && mw_live_count() == 0, "each kept entry is removable");
	for (i = 0; i < 50; i++)
		insert(base + 16 * (uintptr_t)i, 23, 5);
	mw_live_clear(0);
	ok(mw_live_count() == 0 && census(0).n == 0, "clear(0) empties all");
	b = mw_live_unknown_bytes();
	ok(mw_live_remove(base, &out) == 0 && mw_live_unknown() == 1 &&
		   mw_live_unknown_bytes() == b + usable_of(base),
	   "a block recorded before clear is unknown afterwards");
	ok(insert(base, 24, 8) == 0 && mw_live_remove(base, &out) == 1,
	   "the table works after clear");
	mw_live_fork_lock();
	mw_live_fork_unlock();
	ok(insert(base, 24, 8) == 0 && mw_live_remove(base, &out) == 1,
	   "and after fork_lock/fork_unlock");
	mw_live_clear(0);
}

/* Pointers of one fresh region whose home slot in a 256-slot array is
 * one of a few, the last one close to the array's end, so the probe run
 * wraps to slot 0: backward-shift deletion's cyclic case. */
static void test_collisions(void)
{
	static const struct { uint32_t home; int n; } want[] = {
		{ 250, 80 }, { 253, 25 }, { 0, 20 }, { 2, 15 }, { 120, 10 },
	};
	enum { N = 150 };	/* under 5/8 of 256: no growth */
	uintptr_t base = region(1), ptrs[N], seen[N + 8];
	int present[N], n = 0, w, k, i, bad = 0, step;
	uint64_t mem0 = mw_live_memory(), count0 = mw_live_count();
	uint32_t rng = 12345;
	struct mw_live_entry out;

	for (w = 0; w < (int)(sizeof(want) / sizeof(want[0])); w++)
		for (k = 0, i = 0; k < want[w].n && i < 65536; i++) {
			uintptr_t p = base + 16 * (uintptr_t)i;

			if (home_slot(p, 255) == want[w].home)
				ptrs[n++] = p, k++;
		}
	ok(n == N, "found %d pointers with %zu chosen home slots", n,
	   sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++) {
		present[i] = 1;
		bad += insert(ptrs[i], 30, (uint64_t)i + 1) != 0;
	}
	ok(!bad && mw_live_count() == count0 + (uint64_t)n,
	   "%d colliding inserts", n);
	ok(mw_live_memory() - mem0 == 256 * sizeof(struct mw_live_entry),
	   "all in one 256-slot array: the probe runs are long and wrap");
	/* remove in a random order, re-inserting some, checking after each
	 * step that every present pointer is still found and no other */
	for (step = 0; step < 600; step++) {
		struct census c = { 0 };
		int j, found = 0;

		rng = rng * 1103515245 + 12345;
		i = (int)((rng >> 8) % (uint32_t)n);
		if (present[i]) {
			if (mw_live_remove(ptrs[i], &out) != 1 ||
			    mw_live_size(&out) != (uint64_t)i + 1)
				bad++;
			present[i] = 0;
		} else if ((rng >> 20) & 1) {
			bad += insert(ptrs[i], 30, (uint64_t)i + 1) != 0;
			present[i] = 1;
		}
		c.ptrs = seen;
		c.cap = N + 8;
		mw_live_each(30, census_fn, &c);
		for (j = 0; j < n; j++) {
			int in = 0;
			uint64_t m;

			for (m = 0; m < c.n && m < c.cap; m++)
				in |= seen[m] == ptrs[j];
			found += in;
			bad += in != present[j];
		}
		bad += c.n != (uint64_t)found;
	}
	ok(!bad, "600 random removes/reinserts: each present pointer found, "
	   "each removed one gone (%d mismatches)", bad);
	for (i = 0; i < n; i++)
		if (present[i])
			bad += mw_live_take(ptrs[i], &out) != 1;
	ok(!bad && mw_live_count() == count0, "the rest taken out");
}

/* Tens of thousands of entries in one shard (one region): it doubles
 * many times; every entry survives each move. */
static void test_growth(void)
{
	enum { N = 60000 };
	uintptr_t base = region(1);
	uint64_t mem0 = mw_live_memory(), count0 = mw_live_count();
	struct mw_live_entry out;
	struct census c;
	int i, bad = 0;

	for (i = 0; i < N; i++)
		bad += insert(base + 16 * (uintptr_t)i, 40, (uint64_t)i % 100) != 0;
	c = census(40);
	ok(!bad && mw_live_count() == count0 + N && c.n == N &&
		   c.bytes == (uint64_t)N / 100 * 4950,
	   "%d entries in one shard, every one seen once with its size", N);
	ok(mw_live_memory() - mem0 >= (uint64_t)N * 8 / 5 *
					      sizeof(struct mw_live_entry),
	   "the shard grew to keep its load at or under 5/8 (%llu bytes)",
	   (unsigned long long)(mw_live_memory() - mem0));
	for (i = 0; i < N; i += 2)
		bad += mw_live_remove(base + 16 * (uintptr_t)i, &out) != 1 ||
		       mw_live_size(&out) != (uint64_t)i % 100;
	c = census(40);
	ok(!bad && c.n == N / 2, "every other one removed with its own size");
	for (i = 1; i < N; i += 2)
		bad += mw_live_remove(base + 16 * (uintptr_t)i, &out) != 1 ||
		       mw_live_size(&out) != (uint64_t)i % 100;
	ok(!bad && mw_live_count() == count0, "the rest removed");
}

static uint64_t vm_bytes(void)
{
	char buf[64];
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			pages = strtoul(buf, NULL, 10);
		fclose(f);
	}
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static __attribute__((noinline)) void touch_stack(void)
{
	volatile char big[256 * 1024];

	memset((char *)big, 0, sizeof(big));
}

/* A shard that cannot grow (mmap refused under RLIMIT_AS) fills up to one
 * empty slot, then refuses inserts with -ENOMEM, counted as dropped,
 * recording nothing; removes and lookups keep working. */
static void test_full(void)
{
	uintptr_t base = region(1), other = region(1);
	struct rlimit old, tight;
	uint64_t count0, dropped0 = mw_live_dropped;
	int i, filled = 0, r_full, r_watch, r_empty, r_again, r_after;
	struct mw_live_entry out;
	uint64_t count_full;

	insert(base, 50, 1);		/* the shard's first array */
	count0 = mw_live_count();
	touch_stack();
	fflush(stdout);
	if (getrlimit(RLIMIT_AS, &old)) {
		ok(0, "getrlimit: %d", errno);
		return;
	}
	tight = old;
	tight.rlim_cur = vm_bytes();	/* not one more page */
	if (setrlimit(RLIMIT_AS, &tight)) {
		ok(0, "setrlimit: %d", errno);
		return;
	}
	/* no stdio or malloc until the limit is lifted */
	for (i = 1; i < 1000; i++) {
		if (insert(base + 16 * (uintptr_t)i, 50, 1) != 0)
			break;
		filled++;
	}
	r_full = insert(base + 16 * 5000, 50, 1);
	r_watch = mw_live_watch(base + 16 * 5001, 16, 51);
	count_full = mw_live_count();
	r_empty = insert(other, 50, 1);	/* fresh shard: no array at all */
	r_again = mw_live_remove(base + 16 * 3, &out);
	r_after = insert(base + 16 * 5000, 50, 1);
	setrlimit(RLIMIT_AS, &old);

	ok(filled == 254, "without memory a 256-slot shard takes 255 entries "
	   "(1 + %d), keeping one slot empty", filled);
	ok(r_full == -ENOMEM && r_watch == -ENOMEM &&
		   count_full == count0 + (uint64_t)filled,
	   "then insert and watch return -ENOMEM and record nothing");
	ok(r_empty == -ENOMEM, "a shard that cannot get its first array: -ENOMEM");
	/* the filling loop's last insert, r_full, r_watch, r_empty */
	ok(mw_live_dropped == dropped0 + 4, "each refusal counted as dropped (%llu)",
	   (unsigned long long)(mw_live_dropped - dropped0));
	ok(r_again == 1 && r_after == 0,
	   "removes still work, and free room is used again");
	for (i = 0; i < 1000; i++)
		mw_live_take(base + 16 * (uintptr_t)i, &out);
	mw_live_take(base + 16 * 5000, &out);
	ok(mw_live_count() == count0 - 1, "emptied");
	ok(insert(other, 50, 1) == 0 && mw_live_take(other, &out) == 1,
	   "with memory back, the refused shard gets its array");
}

/* A random run over 4096 pointers in two regions checked against a
 * model: present or not, and with which size. */
static void test_model(void)
{
	enum { N = 4096, OPS = 200000 };
	static uint64_t size[N];	/* 0: absent */
	uintptr_t a = region(1), b = region(1);
	uint64_t count0 = mw_live_count(), u0 = mw_live_unknown(), unknown = 0;
	uint64_t x = 88172645463325252ull, live = 0;
	struct mw_live_entry out, stale;
	int i, bad = 0;

	for (i = 0; i < OPS; i++) {
		unsigned k, op;
		uintptr_t p;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		k = (unsigned)(x % N);
		op = (unsigned)(x >> 32) % 3;
		p = (k & 1 ? a : b) + 16 * (uintptr_t)(k >> 1);
		if (op < 2) {
			struct mw_live_entry e = mk(p, 60, (uint64_t)i + 1, 0);
			int r = mw_live_insert(&e, &stale);

			if (size[k]) {
				bad += r != 1 || mw_live_size(&stale) != size[k];
			} else {
				bad += r != 0;
				live++;
			}
			size[k] = (uint64_t)i + 1;
		} else {
			int r = mw_live_remove(p, &out);

			if (size[k]) {
				bad += r != 1 || mw_live_size(&out) != size[k];
				live--;
			} else {
				bad += r != 0;
				unknown++;
			}
			size[k] = 0;
		}
	}
	ok(!bad, "%d random inserts/removes agree with the model", OPS);
	ok(mw_live_count() == count0 + live && census(60).n == live,
	   "count and each() agree: %llu live", (unsigned long long)live);
	ok(mw_live_unknown() == u0 + unknown, "%llu unknown removes counted",
	   (unsigned long long)unknown);
	for (i = 0; i < N; i++)
		if (size[i])
			mw_live_take((i & 1 ? a : b) + 16 * (uintptr_t)(i >> 1),
				     &out);
	ok(mw_live_count() == count0, "model emptied");
}

int main(void)
{
	mw_real.malloc_usable_size = fake_usable_size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_collisions();	/* first: it wants a shard nobody used */
	test_entry_packing();
	test_insert_remove();
	test_unknown();
	test_watch();
	test_clear();
	test_growth();
	test_full();
	test_model();
	return tap_done();
}
