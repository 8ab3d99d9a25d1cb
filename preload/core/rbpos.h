/* SPDX-License-Identifier: MIT */
/* rbpos.h - optional Ruby awareness: the source location of the current
 * allocation, when the calling thread may ask Ruby for it.
 *
 * Every symbol is looked up with dlsym at start-up; in a process without
 * libruby all of this reports "no location" and costs one branch.
 */
#ifndef MW_RBPOS_H
#define MW_RBPOS_H

#include <stdint.h>

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* Looks the Ruby symbols up.  Returns 1 if the process runs Ruby.
 * Context: not a hook (calls dlsym, dlopen(RTLD_NOLOAD), dlinfo). */
int mw_ruby_init(void);

/* 1 once mw_ruby_init found a usable Ruby. */
extern int mw_ruby_present;

/* The GC generation last seen under the GVL (rb_gc_count()). */
extern uint64_t mw_ruby_generation;

/* Reads the GC generation now (after a GC of ours: an allocation would
 * read it next, and a dump may come first).  Context: a Ruby thread
 * holding the GVL; never allocates. */
void mw_ruby_generation_refresh(void);

/* Where the calling thread's Ruby code is: the innermost Ruby frame's
 * program counter and instruction sequence.  The pc lies in the iseq's
 * code buffer (mw_ruby_pos_code), so while that buffer is not freed
 * (pc, iseq) names one source line: a cache keyed on it need not compute
 * the line again.  pc is 0 where this Ruby's frames are not known to us
 * (then only mw_ruby_pos_location answers). */
struct mw_ruby_pos {
	uintptr_t pc, iseq;
};

/* mw_ruby_pos's work, in a process running Ruby. */
int mw_ruby_pos_present(struct mw_ruby_pos *pos);

/* Returns 1 and fills @pos when the calling thread holds the GVL, has
 * an execution context and (where frames are known) runs Ruby code;
 * returns 0 otherwise.  Also refreshes mw_ruby_generation.  Inline: a
 * process without Ruby pays a load, not a call.
 * Context: hook-safe; never allocates. */
static inline int mw_ruby_pos(struct mw_ruby_pos *pos)
{
	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	return mw_ruby_pos_present(pos);
}

/* The code buffer (a malloc block of Ruby's) that @pos's pc lies in:
 * sets *code and *len (its bytes) and returns 1, or returns 0 when pc is
 * 0 or not inside the buffer the iseq names.  Context: hook-safe, on the
 * thread that just took @pos (or walked it), holding the GVL. */
int mw_ruby_pos_code(const struct mw_ruby_pos *pos, uintptr_t *code,
		     uint64_t *len);

/* The source location at @pos, just taken on this thread: sets *path
 * (owned by Ruby, valid until the next GC compaction: copy it) and
 * *line, returns 1; 0 if there is none.  Checks that the frame we read
 * is the one Ruby reports and, if not, clears pos->pc (not to be cached)
 * and stops reading frames: for good on 3.1, on 3.2+ once mismatches
 * outnumber matches (there eval'd code in a method mismatches by design
 * and is named by its own file).  Context: hook-safe; never allocates. */
int mw_ruby_pos_location(struct mw_ruby_pos *pos, const char **path,
			 int *line);

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

/* How Ruby allocations find their position: "read" (we read Ruby's
 * frames: positions and stacks are cached by pc), "asked" (Ruby is asked
 * on every allocation: its frames' layout is not known or not yet
 * proven), "none" (no Ruby).  Context: any. */
const char *mw_ruby_frames_how(void);

/* 1 if the calling thread has a Ruby execution context (and holds the
 * GVL when @need_gvl): it may then register a postponed job.
 * Context: async-signal-safe on threads that have run Ruby code (their
 * TLS block for libruby exists). */
int mw_ruby_thread_has_ec_sigsafe(int need_gvl);

#pragma GCC visibility pop

#endif
