/* SPDX-License-Identifier: MIT */
/* rbpos_aarch64.c - rbpos_arch.h for aarch64.
 *
 * A shared libruby reaches ruby_current_ec through a TLS descriptor, four
 * instructions the ABI fixes (so that linkers may relax them):
 *
 *	adrp x0, :tlsdesc:ruby_current_ec
 *	ldr  xS, [x0, #:tlsdesc_lo12:ruby_current_ec]
 *	add  x0, x0, #:tlsdesc_lo12:ruby_current_ec
 *	blr  xS				the resolver: x0 = offset from tp
 *
 * then adds tpidr_el0 (the thread pointer).  Built initial-exec, it
 * reads the offset from a GOT slot instead ("adrp xR; ldr xR, [xR,
 * #lo12]", then "add xD, xT, xR" or "ldr xD, [xT, xR]" with xT from
 * "mrs xT, tpidr_el0").
 * Either way we find this thread's &ruby_current_ec (running the
 * resolver as the code does: it is the ABI's only way to ask), then the
 * module whose TLS block holds it, which gives __tls_get_addr's index
 * for every thread.
 *
 * From 3.3 GET_EC() on aarch64 is a call of rb_current_ec() (a leaf
 * that returns the variable, not exported), so rb_profile_frames' first
 * call leads to the sequence.
 */
#define _GNU_SOURCE
#include "core/rbpos_arch.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void *__tls_get_addr(struct tls_index *ti);

#define SCAN_INSNS 64	/* instructions looked at from the function's start */
#define IE_WINDOW 16	/* initial-exec: the add within this many of the ldr */
#define GETTER_INSNS 16	/* a getter's instructions looked at, to its return */

static uint32_t insn_at(const unsigned char *fn, int i)
{
	uint32_t v;

	memcpy(&v, fn + 4 * i, sizeof(v));
	return v;
}

/* ADRP Xd, label: 1 with its register and the page it names. */
static int is_adrp(uint32_t in, uintptr_t pc, unsigned *rd, uintptr_t *page)
{
	int64_t imm;

	if ((in & 0x9f000000u) != 0x90000000u)
		return 0;
	imm = (int64_t)(((in >> 29) & 3) | (((in >> 5) & 0x7ffff) << 2));
	imm = (imm ^ (1 << 20)) - (1 << 20);	/* 21 bits, signed */
	*rd = in & 31;
	*page = (pc & ~(uintptr_t)0xfff) + (uintptr_t)(imm * 4096);
	return 1;
}

/* LDR Xt, [Xn, #imm] (64-bit, unsigned offset): 1 with its parts. */
static int is_ldr(uint32_t in, unsigned *rt, unsigned *rn, unsigned *off)
{
	if ((in & 0xffc00000u) != 0xf9400000u)
		return 0;
	*rt = in & 31;
	*rn = (in >> 5) & 31;
	*off = ((in >> 10) & 0xfff) * 8;
	return 1;
}

/* ADD Xd, Xn, #imm (64-bit, unshifted): 1 with its parts. */
static int is_add_imm(uint32_t in, unsigned *rd, unsigned *rn, unsigned *imm)
{
	if ((in & 0xffc00000u) != 0x91000000u)
		return 0;
	*rd = in & 31;
	*rn = (in >> 5) & 31;
	*imm = (in >> 10) & 0xfff;
	return 1;
}

/* ADD Xd, Xn, Xm (64-bit, no shift), or a 64-bit LDR / STR at
 * [Xn, Xm]: 1 if it adds @a and @b (into a register or an address). */
static int is_add_regs(uint32_t in, unsigned a, unsigned b)
{
	unsigned rn = (in >> 5) & 31, rm = (in >> 16) & 31;
	uint32_t op = in & 0xffe0fc00u;

	return (op == 0x8b000000u || op == 0xf8606800u ||
		op == 0xf8206800u) &&
	       ((rn == a && rm == b) || (rn == b && rm == a));
}

/* MRS Xt, TPIDR_EL0: 1 with its register. */
static int is_mrs_tp(uint32_t in, unsigned *rt)
{
	if ((in & 0xffffffe0u) != 0xd53bd040u)
		return 0;
	*rt = in & 31;
	return 1;
}

/* BLR Xn: 1 if it calls through @rn. */
static int is_blr(uint32_t in, unsigned rn)
{
	return in == (0xd63f0000u | (rn << 5));
}

/* BL label: 1 with its target. */
static int is_bl(uint32_t in, uintptr_t pc, uintptr_t *target)
{
	int64_t imm;

	if ((in & 0xfc000000u) != 0x94000000u)
		return 0;
	imm = (int64_t)(in & 0x03ffffffu);
	imm = (imm ^ (1 << 25)) - (1 << 25);	/* 26 bits, signed */
	*target = pc + (uintptr_t)(imm * 4);
	return 1;
}

/* Any call: BL, BLR, or BLRAA / BLRAB / BLRAAZ / BLRABZ. */
static int is_call(uint32_t in)
{
	return (in & 0xfc000000u) == 0x94000000u ||
	       (in & 0xfffffc1fu) == 0xd63f0000u ||
	       (in & 0xfefff800u) == 0xd63f0800u;
}

/* RET, or RETAA / RETAB. */
static int is_ret(uint32_t in)
{
	return in == 0xd65f03c0u || in == 0xd65f0bffu || in == 0xd65f0fffu;
}

/* Whether @p lies in a loaded object. */
static int mapped(const void *p)
{
	Dl_info i;

	return dladdr(p, &i) != 0;
}

/* Whether @a and @b lie in the same loaded object. */
static int same_object(const void *a, const void *b)
{
	Dl_info ia, ib;

	return dladdr(a, &ia) && dladdr(b, &ib) &&
	       ia.dli_fbase == ib.dli_fbase;
}

/* Runs TLS descriptor @desc's resolver as compiled code does (x0: the
 * descriptor; it returns the offset from tp in x0 and keeps every other
 * register but x30 and the flags): this thread's address of the
 * variable. */
static uintptr_t tlsdesc_address(const void *desc)
{
	register const void *x0 __asm__("x0") = desc;

	__asm__ volatile("ldr x1, [x0]\n\tblr x1"
			 : "+r"(x0) : : "x1", "x30", "cc", "memory");
	return (uintptr_t)__builtin_thread_pointer() + (uintptr_t)x0;
}

/* The TLS descriptor sequence at instruction @i of @fn: 1 with this
 * thread's address of its variable. */
static int tlsdesc_at(const unsigned char *fn, int i, uintptr_t *addr)
{
	uintptr_t pc = (uintptr_t)fn + 4 * (uintptr_t)i, page;
	unsigned r, s, n, lo, d, lo2;
	const void *const *desc;

	if (!is_adrp(insn_at(fn, i), pc, &r, &page) || r != 0 ||
	    !is_ldr(insn_at(fn, i + 1), &s, &n, &lo) || n != 0 || s == 0 ||
	    !is_add_imm(insn_at(fn, i + 2), &d, &n, &lo2) || d != 0 ||
	    n != 0 || lo2 != lo || !is_blr(insn_at(fn, i + 3), s))
		return 0;
	desc = (const void *const *)(page + lo);
	/* the descriptor is in the function's own object (its GOT), its
	 * resolver code of a loaded object (ld.so's) */
	if (!same_object(fn, desc) || !desc[0] || !mapped(desc[0]))
		return 0;
	*addr = tlsdesc_address(desc);
	return 1;
}

/* The initial-exec sequence's GOT load at instruction @i of @fn: 1 with
 * this thread's address of its variable. */
static int initial_exec_at(const unsigned char *fn, int i, uintptr_t *addr)
{
	uintptr_t pc = (uintptr_t)fn + 4 * (uintptr_t)i, page;
	unsigned r, t, n, lo, tp = 32;
	const intptr_t *slot;
	int j;

	if (!is_adrp(insn_at(fn, i), pc, &r, &page) ||
	    !is_ldr(insn_at(fn, i + 1), &t, &n, &lo) || t != r || n != r)
		return 0;
	/* tpidr_el0 read before or after, then added to the offset */
	for (j = i - IE_WINDOW; j < i + IE_WINDOW; j++) {
		uint32_t in;

		if (j < 0 || j >= SCAN_INSNS + IE_WINDOW)
			continue;
		in = insn_at(fn, j);
		if (is_mrs_tp(in, &t))
			tp = t;
		else if (tp < 32 && j > i + 1 && is_add_regs(in, tp, r))
			break;
	}
	if (j == i + IE_WINDOW)
		return 0;
	slot = (const intptr_t *)(page + lo);
	if (!same_object(fn, slot))
		return 0;
	*addr = (uintptr_t)__builtin_thread_pointer() + (uintptr_t)*slot;
	return 1;
}

/* A getter of one TLS variable at @fn (as aarch64 Ruby 3.3+'s
 * rb_current_ec): its TLS sequence, then its return, and no call between
 * (the descriptor's own blr is part of its sequence, stepped over).  1
 * with this thread's address of the variable. */
static int tls_getter_at(const unsigned char *fn, uintptr_t *addr)
{
	int i, found = 0;

	for (i = 0; i < GETTER_INSNS; i++) {
		uint32_t in = insn_at(fn, i);

		if (!found && tlsdesc_at(fn, i, addr)) {
			found = 1;
			i += 3;		/* adrp, ldr, add, blr */
		} else if (!found && initial_exec_at(fn, i, addr)) {
			found = 1;
		} else if (is_ret(in)) {
			return found;
		} else if (is_call(in)) {
			return 0;
		}
	}
	return 0;
}

/* The first TLS variable @fn reads: by a sequence of its own, or through
 * its first call when that leads to a getter (tls_getter_at).  1 with
 * this thread's address of it. */
static int first_tls_read(const unsigned char *fn, uintptr_t *addr)
{
	int i, followed = 0;

	for (i = 0; i < SCAN_INSNS; i++) {
		uintptr_t pc = (uintptr_t)fn + 4 * (uintptr_t)i, callee;

		if (tlsdesc_at(fn, i, addr) || initial_exec_at(fn, i, addr))
			return 1;
		if (!followed && is_bl(insn_at(fn, i), pc, &callee)) {
			followed = 1;
			if (same_object(fn, (const void *)callee) &&
			    tls_getter_at((const unsigned char *)callee, addr))
				return 1;
		}
	}
	return 0;
}

/* The loaded objects that have TLS: module id and block size. */
#define MAX_TLS_MODULES 64
struct tls_modules {
	struct {
		unsigned long module;
		uintptr_t size;
	} m[MAX_TLS_MODULES];
	int n;
};

/* dl_iterate_phdr callback: notes each object's TLS block. */
static int note_tls(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct tls_modules *t = arg;
	int i;

	if (size < offsetof(struct dl_phdr_info, dlpi_tls_modid) +
		   sizeof(info->dlpi_tls_modid) || !info->dlpi_tls_modid)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_TLS &&
		    t->n < MAX_TLS_MODULES) {
			t->m[t->n].module = info->dlpi_tls_modid;
			t->m[t->n++].size = info->dlpi_phdr[i].p_memsz;
		}
	return 0;
}

/* The index of the TLS variable at @addr in this thread.  Each block is
 * asked of __tls_get_addr, outside dl_iterate_phdr (its lock held, the
 * block of a module loaded later than this thread's last TLS update is
 * not shown: the descriptor's static-TLS resolver never updates it). */
static int index_of(uintptr_t addr, struct tls_index *ti)
{
	struct tls_modules t;
	int i;

	t.n = 0;
	dl_iterate_phdr(note_tls, &t);
	for (i = 0; i < t.n; i++) {
		struct tls_index b = { t.m[i].module, 0 };
		uintptr_t start = (uintptr_t)__tls_get_addr(&b);

		if (addr >= start && addr + sizeof(void *) <= start +
							       t.m[i].size) {
			ti->module = b.module;
			ti->offset = addr - start;
			return 1;
		}
	}
	return 0;
}

int mw_rbpos_ec_from_code(const unsigned char *fn, struct tls_index *ti)
{
	struct tls_index found;
	uintptr_t addr = 0;

	if (!first_tls_read(fn, &addr) || !index_of(addr, &found) ||
	    (uintptr_t)__tls_get_addr(&found) != addr)
		return 0;
	*ti = found;
	return 1;
}
