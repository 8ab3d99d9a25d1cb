/* SPDX-License-Identifier: MIT */
/* bpfeval.c - see bpfeval.h */
#define _GNU_SOURCE
#include "checks/bpfeval.h"
#include "process/arch.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SC_ARCH mwi_arch_audit

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif

/* --- what the kernel would do with one syscall ------------------------- */

/* A filter's return value as the kernel acts on it. */
static void classify(uint32_t ret, struct mwi_sc_result *r)
{
	uint32_t act = ret & SECCOMP_RET_ACTION_FULL;

	r->err = 0;
	switch (act) {
	case SECCOMP_RET_ALLOW:
	case SECCOMP_RET_LOG:
		r->action = MWI_SC_ALLOW;
		break;
	case SECCOMP_RET_ERRNO:
		r->action = MWI_SC_ERRNO;
		r->err = (int)(ret & SECCOMP_RET_DATA);
		if (r->err > 4095)
			r->err = 4095;
		break;
	case SECCOMP_RET_TRACE:		/* no seccomp tracer: ENOSYS */
		r->action = MWI_SC_ERRNO;
		r->err = ENOSYS;
		break;
	case SECCOMP_RET_USER_NOTIF:	/* a supervisor answers */
		r->action = MWI_SC_NOTIFY;
		break;
	case SECCOMP_RET_TRAP:
		r->action = MWI_SC_TRAP;
		break;
	default:	/* KILL_PROCESS, KILL_THREAD, and what the kernel
			 * does not know, which it treats as KILL_PROCESS */
		r->action = MWI_SC_KILL;
		break;
	}
}

void mwi_sc_worse(struct mwi_sc_result *r, const struct mwi_sc_result *n,
		  int first)
{
	if (first) {
		*r = *n;
		return;
	}
	if (n->action != r->action || n->err != r->err)
		r->varies = 1;
	r->unknown |= n->unknown;
	if (n->action < r->action) {
		r->action = n->action;
		r->err = n->err;
	}
}

/* --- classic BPF, with what is not known followed both ways ------------ */

struct word {
	uint32_t v;
	int known;
};

struct bpf_state {
	struct word a, x, m[BPF_MEMWORDS];
};

struct walk {
	const struct sock_filter *f;
	unsigned int len;
	int nr;
	long paths;		/* results reached so far */
	struct mwi_sc_result r;
};

#define MAX_PATHS 65536

static void reach(struct walk *w, struct word ret)
{
	struct mwi_sc_result n = { 0 };

	if (!ret.known) {	/* RET A with A unknown: anything */
		n.action = MWI_SC_KILL;
		n.unknown = 1;
	} else {
		classify(ret.v, &n);
	}
	mwi_sc_worse(&w->r, &n, w->paths++ == 0);
}

/* seccomp_data as the kernel fills it for our syscall: nr and arch are
 * known, the instruction pointer and the arguments are not. */
static struct word load(const struct walk *w, uint32_t k)
{
	struct word v = { 0, 0 };

	if (k == offsetof(struct seccomp_data, nr)) {
		v.v = (uint32_t)w->nr;
		v.known = 1;
	} else if (k == offsetof(struct seccomp_data, arch)) {
		v.v = SC_ARCH;
		v.known = 1;
	}
	return v;
}

static struct word alu(uint16_t op, struct word a, struct word b, int *div0)
{
	struct word r = { 0, a.known && b.known };

	*div0 = 0;
	if (op == BPF_NEG) {
		r.known = a.known;
		r.v = -a.v;
		return r;
	}
	if ((op == BPF_DIV || op == BPF_MOD) && b.known && b.v == 0) {
		*div0 = 1;	/* the program returns 0: KILL_THREAD */
		return r;
	}
	/* x & 0 and x << 32 are known whatever x is */
	if (op == BPF_AND && ((a.known && !a.v) || (b.known && !b.v))) {
		r.known = 1;
		r.v = 0;
		return r;
	}
	if (!r.known)
		return r;
	switch (op) {
	case BPF_ADD: r.v = a.v + b.v; break;
	case BPF_SUB: r.v = a.v - b.v; break;
	case BPF_MUL: r.v = a.v * b.v; break;
	case BPF_DIV: r.v = a.v / b.v; break;
	case BPF_MOD: r.v = a.v % b.v; break;
	case BPF_OR: r.v = a.v | b.v; break;
	case BPF_AND: r.v = a.v & b.v; break;
	case BPF_XOR: r.v = a.v ^ b.v; break;
	case BPF_LSH: r.v = b.v >= 32 ? 0 : a.v << b.v; break;
	case BPF_RSH: r.v = b.v >= 32 ? 0 : a.v >> b.v; break;
	default: r.known = 0; break;
	}
	return r;
}

/* Follows the program from @pc; -1 when it cannot be judged. */
static int run(struct walk *w, unsigned int pc, struct bpf_state s)
{
	const struct sock_filter *in;
	struct word k, src;
	int div0, taken;

	for (; pc < w->len; pc++) {
		if (w->paths >= MAX_PATHS)
			return -1;
		in = &w->f[pc];
		k.v = in->k;
		k.known = 1;
		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
			if (in->code == (BPF_LD | BPF_W | BPF_ABS))
				s.a = load(w, in->k);
			else if (in->code == (BPF_LD | BPF_W | BPF_LEN))
				s.a = (struct word){ sizeof(struct seccomp_data), 1 };
			else if (in->code == (BPF_LD | BPF_IMM))
				s.a = k;
			else if (in->code == (BPF_LD | BPF_MEM) &&
				 in->k < BPF_MEMWORDS)
				s.a = s.m[in->k];
			else
				return -1;
			break;
		case BPF_LDX:
			if (in->code == (BPF_LDX | BPF_W | BPF_LEN))
				s.x = (struct word){ sizeof(struct seccomp_data), 1 };
			else if (in->code == (BPF_LDX | BPF_IMM))
				s.x = k;
			else if (in->code == (BPF_LDX | BPF_MEM) &&
				 in->k < BPF_MEMWORDS)
				s.x = s.m[in->k];
			else
				return -1;
			break;
		case BPF_ST:
		case BPF_STX:
			if (in->k >= BPF_MEMWORDS)
				return -1;
			s.m[in->k] = BPF_CLASS(in->code) == BPF_ST ? s.a : s.x;
			break;
		case BPF_ALU:
			src = BPF_SRC(in->code) == BPF_X ? s.x : k;
			s.a = alu(BPF_OP(in->code), s.a, src, &div0);
			if (div0) {
				reach(w, (struct word){ 0, 1 });
				return 0;
			}
			break;
		case BPF_JMP:
			if (BPF_OP(in->code) == BPF_JA) {
				pc += in->k;
				break;
			}
			src = BPF_SRC(in->code) == BPF_X ? s.x : k;
			if (!s.a.known || !src.known) {
				/* depends on what we do not know: both ways */
				if (run(w, pc + 1 + in->jt, s))
					return -1;
				pc += in->jf;
				break;
			}
			switch (BPF_OP(in->code)) {
			case BPF_JEQ: taken = s.a.v == src.v; break;
			case BPF_JGT: taken = s.a.v > src.v; break;
			case BPF_JGE: taken = s.a.v >= src.v; break;
			case BPF_JSET: taken = (s.a.v & src.v) != 0; break;
			default: return -1;
			}
			pc += taken ? in->jt : in->jf;
			break;
		case BPF_RET:
			reach(w, BPF_RVAL(in->code) == BPF_A ? s.a : k);
			return 0;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				s.x = s.a;
			else
				s.a = s.x;
			break;
		default:
			return -1;
		}
	}
	return -1;	/* fell off the end: the kernel never loads that */
}

/* What one program does with syscall @nr. */
void mwi_bpf_evaluate(const struct sock_filter *f, unsigned int len, int nr,
		     struct mwi_sc_result *r)
{
	struct walk w = { f, len, nr, 0, { 0 } };
	struct bpf_state s;

	memset(&s, 0, sizeof(s));
	/* the kernel zeroes A, X and M[] before a program runs */
	s.a.known = s.x.known = 1;
	for (int i = 0; i < BPF_MEMWORDS; i++)
		s.m[i].known = 1;
	if (run(&w, 0, s) || w.paths == 0) {
		memset(r, 0, sizeof(*r));
		r->action = MWI_SC_KILL;
		r->unknown = 1;
		return;
	}
	*r = w.r;
}
