/* SPDX-License-Identifier: MIT */
/* rbstack.c - see rbstack.h */
#include "core/rbstack.h"
#include "core/rbabi.h"
#include "core/codeepoch.h"

/* The words of a control frame (mw_rbabi_cfp_words), found once:
 * 0 not found yet; -1 given up (no walks). */
static int cfp_words;

int mw_ruby_stack(struct mw_ruby_stack *st, int max)
{
	/* C frames take places too: ask for some more than wanted */
	uintptr_t frames[2 * MW_RUBY_STACK_MAX];
	int lines[2 * MW_RUBY_STACK_MAX], n, i;

	st->n = 0;
	if (!mw_rbabi.stack_frames || !mw_rbabi.frame_path ||
	    !mw_rbabi.string_ptr)
		return 0;
	if (max > MW_RUBY_STACK_MAX)
		max = MW_RUBY_STACK_MAX;
	n = mw_rbabi.stack_frames(0, 2 * max, frames, lines);
	for (i = 0; i < n && st->n < max; i++) {
		if (lines[i] <= 0)
			continue;
		st->frame[st->n] = frames[i];
		st->line[st->n++] = lines[i];
	}
	return st->n;
}

int mw_ruby_frame_names(uintptr_t frame, const char **path,
			const char **label)
{
	volatile uintptr_t str = mw_rbabi.frame_path(frame);

	if (!is_string(str))
		return 0;
	*path = mw_rbabi.string_ptr(&str);
	*label = NULL;
	if (mw_rbabi.frame_label) {
		volatile uintptr_t lab = mw_rbabi.frame_label(frame);

		if (is_string(lab))
			*label = mw_rbabi.string_ptr(&lab);
	}
	return *path != NULL;
}

static inline uint64_t walk_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

/* mw_ruby_walk's and mw_ruby_walk_frames' walk: the hash, and with
 * @collect the Ruby frames' positions. */
static inline __attribute__((always_inline)) int
walk(struct mw_ruby_walk *w, int max, int collect)
{
	const uintptr_t *ec;
	uintptr_t cfp, end, step;
	uint64_t h;
	int counted = 0, words = cfp_words;

	if (!__atomic_load_n(&mw_ruby_frames_known, __ATOMIC_RELAXED))
		return 0;
	ec = (const uintptr_t *)*mw_ruby_ec_slot();
	if (!ec)
		return 0;
	if (!words)
		words = cfp_words = mw_rbabi_cfp_words(ec);
	if (words <= 0)
		return 0;
	step = (uintptr_t)words * 8;
	cfp = ec[EC_CFP];
	end = ec[EC_STACK] + ec[EC_STACK_SIZE] * 8;
	if (cfp < ec[EC_STACK] || cfp >= end)
		return 0;
	if (max > MW_RUBY_STACK_MAX)
		max = MW_RUBY_STACK_MAX;
	/* the JIT's innermost frame: Ruby gives it no line (its last word,
	 * jit_return; on 3.1 a word that never changes what a stack is) */
	h = walk_mix(0x9e3779b97f4a7c15ull,
		     ((const uintptr_t *)cfp)[words - 1] != 0);
	w->n = 0;
	/* Ruby counts its Ruby frames and its C methods' up to 2 * max
	 * (mw_ruby_stack): walk at least as far */
	for (; counted < 2 * max && cfp + step <= end; cfp += step) {
		const uintptr_t *f = (const uintptr_t *)cfp;

		if (mw_rbabi.jit_frames_opaque && f[words - 1])
			return 0;
		if (f[CFP_PC]) {
			if (collect) {
				w->frame[w->n].pc = f[CFP_PC];
				w->frame[w->n++].iseq = f[CFP_ISEQ];
			}
			h = walk_mix(walk_mix(h, f[CFP_PC]), f[CFP_ISEQ] ^
				     (uint64_t)mw_code_epoch(f[CFP_PC]) << 48);
			counted++;
		} else {
			const uintptr_t *ep = (const uintptr_t *)f[CFP_EP];
			uintptr_t magic = ep ? ep[0] & FRAME_MAGIC_MASK : 0;

			h = walk_mix(h, f[CFP_ISEQ] ^ magic);
			counted += magic == FRAME_MAGIC_CFUNC;
		}
	}
	w->hash = h;
	return 1;
}

int mw_ruby_walk(struct mw_ruby_walk *w, int max)
{
	return walk(w, max, 0);
}

int mw_ruby_walk_frames(struct mw_ruby_walk *w, int max)
{
	return walk(w, max, 1);
}
