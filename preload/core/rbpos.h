/* SPDX-License-Identifier: MIT */
/* rbpos.h - optional Ruby awareness: the source location of the current
 * allocation, when the calling thread may ask Ruby for it.
 *
 * Every symbol is looked up with dlsym at start-up (rbabi.h); in a
 * process without libruby all of this reports "no location" and costs
 * one branch.  The whole stack, for --stacks: rbstack.h.
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

/* mw_ruby_pos's work, in a process running Ruby.  Context: as
 * mw_ruby_pos. */
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
