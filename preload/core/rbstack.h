/* SPDX-License-Identifier: MIT */
/* rbstack.h - --stacks: the calling thread's whole Ruby stack, asked of
 * Ruby's profiling API (with each frame's line, computed by Ruby), and
 * the key of a cache in front of that ask, read from Ruby's frames by us
 * (rbabi.h: where this Ruby's frame layout is known).  The innermost
 * frame alone, on every allocation: rbpos.h.
 */
#ifndef MW_RBSTACK_H
#define MW_RBSTACK_H

#include <stdint.h>

#include "core/rbpos.h"

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* The calling thread's Ruby frames, innermost first, as Ruby's profiling
 * API (rb_profile_frames, what stackprof reads from a signal handler)
 * gives them: each frame's object (an iseq or a method entry: valid, and
 * naming the same code, until the next GC) and its line.  Frames without
 * a line (C methods) are left out. */
#define MW_RUBY_STACK_MAX 64
struct mw_ruby_stack {
	int n;
	int line[MW_RUBY_STACK_MAX];
	uintptr_t frame[MW_RUBY_STACK_MAX];
};

/* Fills @st with at most @max (<= MW_RUBY_STACK_MAX) frames; returns
 * st->n, 0 when Ruby gives none (or its profiling API is missing).
 * Context: hook-safe, right after mw_ruby_pos returned 1 on this thread
 * (it holds the GVL); never allocates. */
int mw_ruby_stack(struct mw_ruby_stack *st, int max);

/* --stacks: the calling thread's frames as a key for a cache in front of
 * mw_ruby_stack, read from Ruby's frames by us (no line computed):
 * @hash mixes, innermost first, each frame's pc, iseq and code epoch
 * (codeepoch.h), the kind of each C frame between them, and whether the
 * innermost runs JIT code, over at least every frame mw_ruby_stack(max)
 * asks Ruby for; so while the code the pcs lie in lives, equal hashes
 * are equal stacks.  @frame holds the positions of the Ruby frames
 * walked, whose code buffers a cached answer depends on (filled by
 * mw_ruby_walk_frames only). */
struct mw_ruby_walk {
	uint64_t hash;
	int n;
	struct mw_ruby_pos frame[2 * MW_RUBY_STACK_MAX];
};

/* Sets @w->hash for the stack mw_ruby_stack(st, @max) would read;
 * returns 1, or 0 when this Ruby's frames are not known to us (then only
 * mw_ruby_stack answers).  Context: as mw_ruby_stack. */
int mw_ruby_walk(struct mw_ruby_walk *w, int max);

/* mw_ruby_walk, also filling @w->frame and @w->n.  Context: as
 * mw_ruby_stack. */
int mw_ruby_walk_frames(struct mw_ruby_walk *w, int max);

/* The path and the label (the method's or block's name, NULL when Ruby
 * has none) of a frame just returned by mw_ruby_stack: strings owned by
 * Ruby, valid until the next GC compaction (copy them).  Returns 1, or 0
 * when the frame has no path.  Context: as mw_ruby_stack. */
int mw_ruby_frame_names(uintptr_t frame, const char **path,
			const char **label);

#pragma GCC visibility pop

#endif
