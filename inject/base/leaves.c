/* SPDX-License-Identifier: MIT */
/* leaves.c - see leaves.h: the walk of aarch64 code (any CPU) */
#include "base/leaves.h"

#include <errno.h>
#include <string.h>

enum { A64_NEXT, A64_JUMP, A64_COND, A64_RET, A64_BAD };

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* Rd, Rt, Rt2 and Rs are bits 4:0, 4:0, 14:10 and 20:16; 31 is sp
 * where the instruction reads it so (a base register, add/sub immediate
 * or extended, logical immediate), xzr elsewhere. */
#define A64_RD(i) ((i) & 31)
#define A64_RN(i) ((i) >> 5 & 31)
#define A64_RT2(i) ((i) >> 10 & 31)
#define A64_RS(i) ((i) >> 16 & 31)
/* a64_branch's answer for an instruction of another group */
#define A64_OTHER (-1)

/* Branches, exception generation, system (op0 101x): as a64_insn, or
 * A64_OTHER for an instruction of another group. */
static int a64_branch(uint32_t i, uintptr_t pc, uintptr_t *to, const char **why)
{
	if ((i & 0xfc000000u) == 0x14000000u) {			/* b */
		*to = pc + (uintptr_t)(sext(i & 0x3ffffff, 26) * 4);
		return A64_JUMP;
	}
	if ((i & 0xfc000000u) == 0x94000000u) {
		*why = "calls (bl)";
		return A64_BAD;
	}
	if ((i & 0xff000000u) == 0x54000000u ||			/* b.cond */
	    (i & 0x7e000000u) == 0x34000000u) {			/* cbz, cbnz */
		*to = pc + (uintptr_t)(sext(i >> 5 & 0x7ffff, 19) * 4);
		return A64_COND;
	}
	if ((i & 0x7e000000u) == 0x36000000u) {			/* tbz, tbnz */
		*to = pc + (uintptr_t)(sext(i >> 5 & 0x3fff, 14) * 4);
		return A64_COND;
	}
	if ((i & 0xfe000000u) == 0xd6000000u) {
		/* ret Xn, retaa, retab */
		if ((i & 0xfffffc1fu) == 0xd65f0000u || i == 0xd65f0bffu ||
		    i == 0xd65f0fffu)
			return A64_RET;
		*why = "branches through a register (br, blr, eret)";
		return A64_BAD;
	}
	if ((i & 0xff000000u) == 0xd4000000u) {
		*why = "traps or makes a system call (svc, hvc, brk, hlt)";
		return A64_BAD;
	}
	if ((i & 0xffc00000u) == 0xd5000000u) {			/* system */
		if ((i & (1u << 21)) && A64_RD(i) == 30) {
			*why = "reads a system register into x30 (mrs, sysl)";
			return A64_BAD;
		}
		/* pac/aut{i,b}{a,z,sp}, xpaclri: they rewrite x30 */
		if ((i & 0xffffff1fu) == 0xd503231fu || i == 0xd50320ffu) {
			*why = "signs or authenticates x30 (pac, aut, xpaclri)";
			return A64_BAD;
		}
		return A64_NEXT;
	}
	if ((i & 0x1c000000u) == 0x14000000u) {
		*why = "an unallocated branch or system encoding";
		return A64_BAD;
	}
	return A64_OTHER;
}

/* Loads and stores (op0 x1x0): as a64_insn. */
static int a64_memory(uint32_t i, const char **why)
{
	unsigned rd = A64_RD(i), rn = A64_RN(i), rt2 = A64_RT2(i);
	unsigned rs = A64_RS(i);
	int gpr = !(i & (1u << 26));

	if ((i & 0x3b000000u) == 0x18000000u) {		/* literal: no Rn */
		if (gpr && rd == 30) {
			*why = "loads x30";
			return A64_BAD;
		}
		return A64_NEXT;
	}
	/* cpy*, set* (FEAT_MOPS): they update Rd, Rs and Rn */
	if ((i & 0x3b200c00u) == 0x19000400u &&
	    (rd >= 30 || rs >= 30 || rn >= 30)) {
		*why = "copies or sets through x30 or sp (cpy, set)";
		return A64_BAD;
	}
	if (rn == 31 || rn == 30) {
		*why = rn == 31 ? "addresses the stack (sp as its base)"
				: "addresses memory through x30";
		return A64_BAD;
	}
	if (gpr && (rd == 30 ||
		    /* pairs; exclusives, whose status goes to Rs */
		    ((i & 0x38000000u) == 0x28000000u && rt2 == 30) ||
		    ((i & 0x3f000000u) == 0x08000000u &&
		     (rt2 == 30 || rs == 30)))) {
		*why = "loads or stores x30 (ldr, ldp, str, stp, ...)";
		return A64_BAD;
	}
	return A64_NEXT;
}

/* Data processing, immediate and register, SIMD and floating point,
 * SVE, and what is left (undefined here): as a64_insn. */
static int a64_data(uint32_t i, const char **why)
{
	unsigned rd = A64_RD(i), imm4;

	/* data processing, immediate: op0 100x */
	if ((i & 0x1c000000u) == 0x10000000u) {
		if (rd == 30) {
			*why = "writes x30";
			return A64_BAD;
		}
		if (rd == 31 &&
		    (((i & 0x1f000000u) == 0x11000000u && !(i & (1u << 29))) ||
		     ((i & 0x1f800000u) == 0x12000000u && (i >> 29 & 3) != 3))) {
			*why = "writes sp (add, sub, mov, orr, and sp, ...)";
			return A64_BAD;
		}
		return A64_NEXT;
	}
	/* data processing, register: op0 x101 */
	if ((i & 0x0e000000u) == 0x0a000000u) {
		if ((i & 0x1fe00000u) == 0x1a400000u)	/* ccmp: no Rd */
			return A64_NEXT;
		if (rd == 30) {
			*why = "writes x30";
			return A64_BAD;
		}
		if (rd == 31 && (i & 0x1f200000u) == 0x0b200000u &&
		    !(i & (1u << 29))) {
			*why = "writes sp (add, sub extended register)";
			return A64_BAD;
		}
		return A64_NEXT;
	}
	/* SIMD and floating point: op0 x111; what writes a general
	 * register is fmov/fcvt* to one, and smov/umov */
	if ((i & 0x0e000000u) == 0x0e000000u) {
		imm4 = i >> 11 & 15;
		if (rd == 30 && ((i & 0x7f20fc00u) == 0x1e200000u ||
				 ((i & 0x9fe08400u) == 0x0e000400u &&
				  (imm4 == 5 || imm4 == 7)))) {
			*why = "moves a value to x30 (fmov, fcvt, umov, smov)";
			return A64_BAD;
		}
		return A64_NEXT;
	}
	/* SVE: op0 0010.  addvl/addpl may write sp; what else writes a
	 * general register (cntb, incb, lasta, ...) is taken, as any
	 * Rd of 30 is, to write x30 */
	if ((i & 0x1e000000u) == 0x04000000u) {
		if ((i & 0xffa0f800u) == 0x04205000u && rd == 31) {
			*why = "writes sp (addvl, addpl)";
			return A64_BAD;
		}
		if (rd == 30) {
			*why = "may write x30 (SVE, Rd of 30)";
			return A64_BAD;
		}
		return A64_NEXT;
	}
	*why = "undefined here (udf, SME, unallocated)";
	return A64_BAD;
}

/* What instruction @i at @pc does to the walk: A64_NEXT (falls
 * through), A64_JUMP (to *@to only), A64_COND (to *@to or on), A64_RET,
 * or A64_BAD (*@why says what it does). */
static int a64_insn(uint32_t i, uintptr_t pc, uintptr_t *to, const char **why)
{
	int r = a64_branch(i, pc, to, why);

	if (r != A64_OTHER)
		return r;
	if ((i & 0x0a000000u) == 0x08000000u)
		return a64_memory(i, why);
	return a64_data(i, why);
}

#define SEEN_SLOTS 8192		/* a power of 2, twice MWI_LEAF_WALK_MAX */

/* Adds @off to the open-addressing set @seen (offsets + 1, 0 free): 1 if
 * it was new. */
static int see(uint32_t *seen, uint32_t off)
{
	uint32_t h = (off >> 2) * 2654435761u;

	for (;; h++) {
		uint32_t *s = &seen[h & (SEEN_SLOTS - 1)];

		if (*s == off + 1)
			return 0;
		if (!*s) {
			*s = off + 1;
			return 1;
		}
	}
}

int mwi_leaf_walk_a64(uintptr_t entry, uintptr_t lo, uintptr_t hi,
		      struct mwi_leaf_walk *w)
{
	uint32_t seen[SEEN_SLOTS], todo[MWI_LEAF_WALK_MAX];
	int ntodo = 0;

	memset(w, 0, sizeof(*w));
	memset(seen, 0, sizeof(seen));
	w->lo = w->hi = entry;
	if (entry < lo || entry >= hi || (entry & 3) || hi - lo >= 1ul << 31) {
		w->at = entry;
		w->why = "its entry is outside libc's code";
		return -EINVAL;
	}
	todo[ntodo++] = (uint32_t)(entry - lo);
	while (ntodo) {
		uintptr_t pc = lo + todo[--ntodo], to = 0;

		for (;;) {
			uint32_t insn;
			const char *why = NULL;
			int k;

			if (!see(seen, (uint32_t)(pc - lo)))
				break;
			if (++w->insns > MWI_LEAF_WALK_MAX) {
				w->at = pc;
				w->why = "longer than MWI_LEAF_WALK_MAX instructions";
				return -E2BIG;
			}
			if (pc < w->lo)
				w->lo = pc;
			if (pc + 4 > w->hi)
				w->hi = pc + 4;
			memcpy(&insn, (const void *)pc, sizeof(insn));
			k = a64_insn(insn, pc, &to, &why);
			if (k == A64_BAD) {
				w->at = pc;
				w->insn = insn;
				w->why = why;
				return -EINVAL;
			}
			if (k == A64_RET)
				break;
			if ((k == A64_JUMP || k == A64_COND) &&
			    (to < lo || to >= hi)) {
				w->at = pc;
				w->insn = insn;
				w->why = "branches out of libc's code";
				return -EINVAL;
			}
			if (k == A64_COND)
				todo[ntodo++] = (uint32_t)(to - lo);
			pc = k == A64_JUMP ? to : pc + 4;
			if (pc + 4 > hi) {
				w->at = pc - 4;
				w->insn = insn;
				w->why = "runs off the end of libc's code";
				return -EINVAL;
			}
		}
	}
	return 0;
}
