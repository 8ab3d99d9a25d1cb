/* SPDX-License-Identifier: MIT */
/* The injector's leaves (inject/base/leaves_ARCH.c) as this CPU's libc picks them.
 *  - the walk (mwi_leaf_walk_a64) on hand-written aarch64 code: a leaf,
 *    and each thing a leaf must never do, found at its address; on any
 *    CPU (it only reads words);
 *  - every name of mwi_leaf_names resolves, with dlsym as find_leaves
 *    (inject/process/maps.c) does, inside this process's libc, and
 *    mwi_maps_read of this process keeps exactly those (on aarch64:
 *    those the walk finds to be leaves, with the span it reached);
 *  - on aarch64, the code each one reaches is walked and must be a
 *    leaf; the failures name the routine, the variant's address (from
 *    libc's load base) and the instruction.  x86-64's list was checked
 *    by hand (leaves_x86_64.c): there the walk is not run on libc. */
#define _GNU_SOURCE
#include "base/leaves.h"
#include "process/maps.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#define NOP 0xd503201fu
#define RET 0xd65f03c0u

static int walk(const uint32_t *code, size_t n, struct mwi_leaf_walk *w)
{
	return mwi_leaf_walk_a64((uintptr_t)code, (uintptr_t)code,
				 (uintptr_t)(code + n), w);
}

static void test_walk_leaf(void)
{
	static const uint32_t code[] = {
		0xb4000060u,	/* cbz x0, 3f */
		0x910043e0u,	/* add x0, sp, #16: reads sp, fine */
		0x17fffffeu,	/* b 0b */
		0x3d80001eu,	/* 3: str q30, [x0]: v30, not x30 */
		0x36000040u,	/* tbz w0, #0, 6f */
		0x54000041u,	/* b.ne 7f */
		0xd65f0020u,	/* 6: ret x1 */
		RET,		/* 7: ret */
		NOP,		/* never reached */
	};
	struct mwi_leaf_walk w;
	int ret = walk(code, sizeof(code) / 4, &w);

	ok(ret == 0 && w.insns == 8 && w.lo == (uintptr_t)code &&
	   w.hi == (uintptr_t)(code + 8),
	   "a leaf walked: %d, %d instructions, span %ld..%ld",
	   ret, w.insns, (long)(w.lo - (uintptr_t)code),
	   (long)(w.hi - (uintptr_t)code));
}

static void test_walk_offences(void)
{
	static const struct {
		uint32_t insn;
		const char *what;
	} bad[] = {
		{ 0x94000002u, "bl" },
		{ 0xa9bf7bfdu, "stp x29, x30, [sp, #-16]!" },
		{ 0xd4000001u, "svc #0" },
		{ 0xaa0003feu, "mov x30, x0" },
		{ 0xd10043ffu, "sub sp, sp, #16" },
		{ 0xd61f0220u, "br x17" },
		{ 0xd63f0220u, "blr x17" },
		{ 0xf940001eu, "ldr x30, [x0]" },
		{ 0xf81f0fdeu, "str x30, [x30, #-16]!" },
		{ 0x9e66001eu, "fmov x30, d0" },
		{ 0x4e083c1eu, "umov x30, v0.d[0]" },
		{ 0xd503233fu, "paciasp" },
		{ 0x9100001fu, "mov sp, x0" },
		{ 0xf94007e0u, "ldr x0, [sp, #8]" },
		{ 0x1d01045eu, "cpyp [x30]!, [x1]!, x2!" },
		{ 0x00000000u, "udf #0" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* the offence past a conditional branch: both paths walked */
		uint32_t code[] = { 0x54000040u /* b.eq 2f */, RET,
				    bad[i].insn, RET };
		struct mwi_leaf_walk w;
		int ret = walk(code, 4, &w);

		ok(ret == -EINVAL && w.at == (uintptr_t)(code + 2) &&
		   w.insn == bad[i].insn && w.why,
		   "%s is no leaf's: %d, at %ld: %s", bad[i].what, ret,
		   (long)(w.at - (uintptr_t)code), w.why ? w.why : "-");
	}
}

static void test_walk_bounds(void)
{
	static const uint32_t out[] = { 0x14000004u /* b .+16 */, RET };
	static const uint32_t off[] = { NOP, NOP };
	static uint32_t longer[MWI_LEAF_WALK_MAX + 8];
	struct mwi_leaf_walk w;
	size_t i;
	int ret;

	ret = walk(out, 2, &w);
	ok(ret == -EINVAL && w.at == (uintptr_t)out,
	   "a branch out of the code: %d (%s)", ret, w.why ? w.why : "-");
	ret = walk(off, 2, &w);
	ok(ret == -EINVAL && w.at == (uintptr_t)(off + 1),
	   "running off its end: %d (%s)", ret, w.why ? w.why : "-");
	for (i = 0; i < MWI_LEAF_WALK_MAX + 7; i++)
		longer[i] = NOP;
	longer[i] = RET;
	ret = walk(longer, MWI_LEAF_WALK_MAX + 8, &w);
	ok(ret == -E2BIG && w.insns == MWI_LEAF_WALK_MAX + 1,
	   "%d instructions: the walk gives up: %d", MWI_LEAF_WALK_MAX + 8,
	   ret);
}

/* this process's libc, and what the injector's own reader keeps of it */
static void test_libc(void)
{
	static struct mwi_maps m;
	uintptr_t lo_x, hi_x, base;
	int kept = 0, ret;
	size_t i;

	ret = mwi_maps_read(getpid(), &m);
	ok(ret == 0 && m.libc_lo < m.libc_hi, "our libc: %d, code %#lx-%#lx",
	   ret, (unsigned long)m.libc_lo, (unsigned long)m.libc_hi);
	if (ret)
		return;
	lo_x = m.libc_lo;
	hi_x = m.libc_hi;
	base = m.libc_base;
	for (i = 0; i < mwi_leaf_count; i++) {
		const char *name = mwi_leaf_names[i];
		uintptr_t at = (uintptr_t)dlsym(RTLD_DEFAULT, name);
		struct mwi_leaf_walk w = { 0 };
		int j, found = -1;

		for (j = 0; j < m.nleaf; j++)
			if (m.leaf[j] == at)
				found = j;
		if (at < lo_x || at >= hi_x) {
			ok(0, "%s resolves inside libc's code (at %#lx)", name,
			   (unsigned long)at);
			continue;
		}
#if defined(__aarch64__)
		ret = mwi_leaf_walk_a64(at, lo_x, hi_x, &w);
		if (ret)
			ok(0, "%s at libc+%#lx: not a leaf: %#010x at "
			   "libc+%#lx %s", name, (unsigned long)(at - base),
			   (unsigned)w.insn, (unsigned long)(w.at - base),
			   w.why);
		else
			ok(1, "%s at libc+%#lx: a leaf, %d instructions in "
			   "libc+%#lx..%#lx", name, (unsigned long)(at - base),
			   w.insns, (unsigned long)(w.lo - base),
			   (unsigned long)(w.hi - base));
		ok(ret ? found < 0 : found >= 0 && m.leaf_lo[found] == w.lo &&
		   m.leaf_hi[found] == w.hi,
		   "%s: the injector %s it%s", name,
		   found < 0 ? "leaves out" : "keeps",
		   ret ? "" : ", with the same span");
#else
		(void)w;
		ok(found >= 0, "%s at libc+%#lx: inside libc, kept by the "
		   "injector", name, (unsigned long)(at - base));
#endif
		kept += found >= 0;
	}
	ok(kept == m.nleaf, "the injector keeps %d leaves, none but these",
	   m.nleaf);
#if !defined(__aarch64__)
	printf("# the walk of libc's code is aarch64-only: this CPU's list "
	       "was checked by hand (inject/base/leaves_x86_64.c)\n");
#endif
}

int main(void)
{
	alarm(60);
	test_walk_leaf();
	test_walk_offences();
	test_walk_bounds();
	test_libc();
	return tap_done();
}
