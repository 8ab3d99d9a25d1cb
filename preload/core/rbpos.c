/* SPDX-License-Identifier: MIT */
/* rbpos.c - see rbpos.h */
#include "core/rbpos.h"
#include "core/rbabi.h"

#include <stddef.h>

/* Written once by mw_ruby_init (the constructor or the helper, before
 * tracking is enabled: mw_track_enable's release store publishes it and
 * mw_rbabi); read-only afterwards. */
int mw_ruby_present;
/* Atomic (relaxed): stored by any Ruby thread in a hook, read by hooks
 * and readers; a stale value ages a block by one GC less. */
uint64_t mw_ruby_generation;

/* Set once the process is exiting: from 3.2 nothing we can read says
 * that Ruby's VM is gone (ruby_current_vm_ptr is not exported), while
 * "has the GVL" stays true on the main thread after ruby_vm_destruct
 * (which keeps the main thread's struct) and rb_gc_count then reads a
 * NULL VM.  Our destructor runs in exit before liburcu's (we depend on
 * it), whose calloc crashed there. */
static int vm_gone;
#define PROFILE_FIRST 2		/* frames asked for first */

/* Each Ruby miss compares our frame with Ruby's: a mismatch is not
 * cached (eval'd code in a method: Ruby names the method's file), and
 * too many of them mean our frames are not Ruby's. */
static unsigned long frames_matched, frames_mismatched;

/* Whether ZJIT runs: its frames' pcs are then not in their cfps. */
static inline int zjit_running(void)
{
	return mw_rbabi.zjit_entry && *mw_rbabi.zjit_entry;
}

/* The innermost frame with a pc from @cfp (the EC's current frame) to
 * @end, at most PROFILE_DEPTH frames, as rb_profile_frames walks them:
 * it gives the innermost frame no line (so names its caller) when the
 * JIT runs it, and so do we.  Returns the frame, or NULL where Ruby
 * must be asked: that frame, or any frame of ZJIT's code. */
static const uintptr_t *ruby_frame(uintptr_t cfp, uintptr_t end)
{
	int n;

	for (n = 0; n < PROFILE_DEPTH && cfp + CFP_WORDS * 8 <= end;
	     n++, cfp += CFP_WORDS * 8) {
		const uintptr_t *f = (const uintptr_t *)cfp;

		if (!f[CFP_PC])
			continue;	/* a C method's (or block's) frame */
		return f[CFP_JIT_RETURN] && (n == 0 || zjit_running())
		       ? NULL : f;
	}
	return NULL;
}

/* 3.2+: the innermost Ruby frame's pc and iseq into @pos, when known. */
static void walk_frames(struct mw_ruby_pos *pos, const uintptr_t *ec)
{
	const uintptr_t *f;

	if (mw_ruby_layout_tries > 0 && !mw_rbabi_prove_layout(ec))
		return;
	if (ec[EC_CFP] < ec[EC_STACK])
		return;
	f = ruby_frame(ec[EC_CFP], ec[EC_STACK] + ec[EC_STACK_SIZE] * 8);
	if (f) {
		pos->pc = f[CFP_PC];
		pos->iseq = f[CFP_ISEQ];
	}
}

int mw_ruby_init(void)
{
	if (mw_ruby_present)
		return 1;
	if (!mw_rbabi_find())
		return 0;
	__atomic_store_n(&mw_ruby_present, 1, __ATOMIC_RELEASE);
	return 1;
}

void mw_ruby_generation_refresh(void)
{
	if (__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE) &&
	    mw_rbabi.gc_count && !__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE))
		__atomic_store_n(&mw_ruby_generation, mw_rbabi.gc_count(),
				 __ATOMIC_RELAXED);
}

int mw_ruby_pos_present(struct mw_ruby_pos *pos)
{
	void **ec;

	if (mw_rbabi.via_profile) {
		/* From 3.2 "has the GVL" reads the thread through the EC
		 * itself: true only once the EC exists. */
		if (__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE) ||
		    !mw_rbabi.has_gvl())
			return 0;
		__atomic_store_n(&mw_ruby_generation, mw_rbabi.gc_count(),
				 __ATOMIC_RELAXED);
		pos->pc = pos->iseq = 0;
		if (__atomic_load_n(&mw_ruby_frames_known, __ATOMIC_RELAXED) ||
		    mw_ruby_layout_tries > 0) {
			ec = mw_ruby_ec_slot();
			if (*ec)
				walk_frames(pos, *ec);
		}
		return 1;
	}
	/* "has the GVL" is only asked of Ruby threads: it reads Ruby's own
	 * thread-local pointer and is false for every other thread. */
	if (!mw_rbabi.has_gvl() || !*mw_rbabi.vm_ptr)
		return 0;
	/* During ruby_setup() the GVL is held before the EC exists. */
	ec = mw_ruby_ec_slot();
	if (!*ec)
		return 0;
	__atomic_store_n(&mw_ruby_generation, mw_rbabi.gc_count(),
			 __ATOMIC_RELAXED);
	pos->pc = pos->iseq = 0;
	if (__atomic_load_n(&mw_ruby_frames_known, __ATOMIC_RELAXED)) {
		void **e = *ec;
		uintptr_t *cfp = mw_rbabi.ruby_level_cfp(e, e[EC_CFP]);

		if (!cfp)
			return 0;	/* no Ruby code on this thread yet */
		pos->pc = cfp[CFP_PC];
		pos->iseq = cfp[CFP_ISEQ];
	}
	return 1;
}

int mw_ruby_pos_code(const struct mw_ruby_pos *pos, uintptr_t *code,
		     uint64_t *len)
{
	const struct iseq_body_head *body;
	uintptr_t start;

	if (!pos->pc || !pos->iseq)
		return 0;
	body = ((const struct iseq_body_head **)pos->iseq)[ISEQ_BODY];
	if (!body)
		return 0;
	start = body->iseq_encoded;
	/* the end too: a pc may point just past the last instruction */
	if (pos->pc < start ||
	    pos->pc > start + (uintptr_t)body->iseq_size * sizeof(uintptr_t))
		return 0;
	*code = start;
	*len = (uint64_t)body->iseq_size * sizeof(uintptr_t);
	return 1;
}

/* The innermost frame with a line (C methods' frames have 0), asked
 * of the frames in @start .. @start + @limit - 1.  Ruby computes a line
 * for every Ruby frame it returns (a search in the iseq's line table),
 * so the frames are asked for a few at a time. */
static const char *profile_location_in(int start, int limit, int *line)
{
	uintptr_t frames[PROFILE_DEPTH];
	int lines[PROFILE_DEPTH], n, i;

	n = mw_rbabi.profile_frames(start, limit, frames, lines);
	for (i = 0; i < n; i++) {
		volatile uintptr_t str;

		if (lines[i] <= 0)
			continue;
		str = mw_rbabi.frame_path(frames[i]);
		if (!is_string(str))
			return NULL;
		*line = lines[i];
		return mw_rbabi.string_ptr(&str);
	}
	*line = n < limit ? -1 : 0;	/* -1: no more frames */
	return NULL;
}

/* Mostly the innermost Ruby frame is the first (Ruby code allocating)
 * or the second (under the C method it called).  Rubies that ignore
 * @start (3.1 to 3.3) return the first two again in the second ask:
 * the same answer, a little more work. */
static const char *profile_location(int *line)
{
	const char *p = profile_location_in(0, PROFILE_FIRST, line);

	if (p || *line < 0)
		return p;
	return profile_location_in(PROFILE_FIRST, PROFILE_DEPTH - PROFILE_FIRST,
				   line);
}

int mw_ruby_pos_location(struct mw_ruby_pos *pos, const char **path,
			 int *line)
{
	int via_profile = mw_rbabi.via_profile;
	const char *p = via_profile ? profile_location(line) :
				      mw_rbabi.source_location(line);

	if (pos->pc) {
		/* Ruby found its location through the same frame: the path
		 * is that iseq's own string */
		volatile uintptr_t str = pos->iseq ?
					 mw_rbabi.iseq_path(pos->iseq) : 0;
		const char *ours = is_string(str) ?
				   mw_rbabi.string_ptr(&str) : NULL;
		int same = p && ours == p;

		if (same)
			frames_matched++;
		/* 3.2+: Ruby names no line for a frame of line 0 (ruby_setup's
		 * "<main>"), where our walk stops */
		if (!same && (!via_profile ||
			      (p && ++frames_mismatched > 2 * frames_matched + 16)))
			__atomic_store_n(&mw_ruby_frames_known, 0,
					 __ATOMIC_RELAXED);
		/* 3.2+: for code eval'd with a file name of its own inside a
		 * method, Ruby gives the method's file beside the eval'd
		 * line; the frame's own iseq names the eval's file */
		if (!same && p && ours && via_profile &&
		    __atomic_load_n(&mw_ruby_frames_known, __ATOMIC_RELAXED))
			p = ours;
		if (!same)
			pos->pc = 0;
	}
	if (!p)
		return 0;
	*path = p;
	return 1;
}

__attribute__((destructor)) static void ruby_exiting(void)
{
	__atomic_store_n(&vm_gone, 1, __ATOMIC_RELEASE);
}

const char *mw_ruby_frames_how(void)
{
	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return "none";
	return __atomic_load_n(&mw_ruby_frames_known, __ATOMIC_RELAXED) ?
	       "read" : "asked";
}

int mw_ruby_thread_has_ec_sigsafe(int need_gvl)
{
	void **ec;

	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	if (need_gvl && !mw_rbabi.has_gvl())
		return 0;
	/* 3.2+: a Ruby thread is one with an EC */
	if (mw_rbabi.via_profile)
		return !__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE) &&
		       mw_rbabi.native_thread_p();
	ec = __tls_get_addr(&mw_rbabi.ec_index);
	return *ec != NULL;
}
