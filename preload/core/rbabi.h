/* SPDX-License-Identifier: MIT */
/* rbabi.h - what of Ruby's ABI holds in this process: the functions
 * libruby exports that we call (looked up at start-up), where each
 * thread's execution context (EC) lives, and the layout of Ruby's
 * private structures we read ourselves (the EC, control frames, iseqs),
 * trusted once proven on a live stack (3.2+) and while it agrees with
 * what Ruby reports (rbpos.c).
 *
 * For rbpos.c and rbstack.c, the hot path: the lookup and the proofs
 * here are cold and out of line; they use the pointers, the layout and
 * the inline helpers.
 */
#ifndef MW_RBABI_H
#define MW_RBABI_H

#include <stddef.h>
#include <stdint.h>

#include "core/rbpos_arch.h"
#include "core/tls.h"

/* ruby_current_ec is a TLS variable: its address differs per thread, so
 * it is reached like compiled code would, through __tls_get_addr (the
 * dynamic linker's: outside our hidden pragma). */
extern void *__tls_get_addr(struct tls_index *ti);

/* Ours alone, never another object's: direct addressing, no GOT. */
#pragma GCC visibility push(hidden)

/* rb_execution_context_t's first words (3.1 to 4.0) */
#define EC_STACK 0	/* vm_stack, */
#define EC_STACK_SIZE 1	/* vm_stack_size (in VALUEs), */
#define EC_CFP 2	/* cfp, ... */
#define CFP_PC 0	/* rb_control_frame_t: pc, sp, iseq, self, ep, ... */
#define CFP_ISEQ 2
#define CFP_EP 4
#define CFP_WORDS 7	/* 3.2+: pc, sp, iseq, self, ep, block_code, */
#define CFP_JIT_RETURN 6	/* jit_return: 3.2 to 4.0 */
/* ep[0] of a frame: its flags; their magic says what kind of frame */
#define FRAME_MAGIC_MASK 0x7fff0001
#define FRAME_MAGIC_CFUNC 0x55550001
#define ISEQ_BODY 2	/* rb_iseq_t: flags, wrapper, body */
/* rb_iseq_constant_body: type and iseq_size (32 bits each), then
 * iseq_encoded, the code buffer iseq_size VALUEs long */
struct iseq_body_head {
	int type;
	unsigned int iseq_size;
	uintptr_t iseq_encoded;
};
#define T_MASK 0x1f	/* RBasic flags: the object's type */
#define T_STRING 0x05
#define PROFILE_DEPTH 8		/* C frames above the innermost Ruby one */

/* Written by mw_rbabi_find only (before mw_ruby_present's release
 * store publishes them); read-only afterwards.  A function is NULL
 * where this Ruby does not export it. */
struct mw_rbabi {
	/* every Ruby (mw_rbabi_find fails without them) */
	int (*has_gvl)(void);
	size_t (*gc_count)(void);
	/* --stacks: rb_profile_frames and rb_profile_frame_label, on every
	 * Ruby (3.1 to 3.4 export them) */
	int (*stack_frames)(int start, int limit, uintptr_t *frames,
			    int *lines);
	uintptr_t (*frame_label)(uintptr_t frame);
	uintptr_t (*frame_path)(uintptr_t frame);
	/* 3.1: the EC is exported, and so is the location */
	const char *(*source_location)(int *line);
	void **vm_ptr;			/* &ruby_current_vm_ptr */
	uintptr_t *(*ruby_level_cfp)(void *ec, void *cfp);
	/* 3.2+: the profiling API (the frames stackprof reads from a
	 * signal handler: no allocation, no lock) */
	int (*profile_frames)(int start, int limit, uintptr_t *frames,
			      int *lines);
	int (*native_thread_p)(void);
	uintptr_t (*thread_current)(void);
	uintptr_t (*iseq_path)(uintptr_t iseq);
	char *(*string_ptr)(volatile uintptr_t *str);
	/* Ruby 3.2 and later export neither the EC nor
	 * rb_source_location_cstr: there the location comes from the
	 * profiling API. */
	int via_profile;
	/* Ruby 4+: a frame running ZJIT code keeps its pc and iseq
	 * elsewhere (its cfp's jit_return says so), so mw_ruby_walk gives
	 * up there. */
	int jit_frames_opaque;
	/* ZJIT's entry, non-NULL while ZJIT runs (its frames as above: a
	 * jit_return, pc and iseq in its own record); NULL without ZJIT. */
	void *const *zjit_entry;
	/* ruby_current_ec's TLS index: module 0 when not known */
	struct tls_index ec_index;
	/* what mw_ruby_ec_slot gives where the index is not known: no EC */
	void *no_ec;
};
extern struct mw_rbabi mw_rbabi;

/* Looks this Ruby's functions up and finds which way its positions are
 * had (mw_rbabi.via_profile; mw_ruby_frames_known on 3.1, where Ruby's
 * exported rb_vm_get_ruby_level_next_cfp finds the frame;
 * mw_ruby_layout_tries on 3.2+, where our own walk may be tried).
 * Returns 1 if the process runs a Ruby we can use, else 0 (mw_rbabi
 * then half filled in: unused, as mw_ruby_present stays 0).
 * Context: mw_ruby_init only, not a hook (calls dlsym, dlopen(RTLD_NOLOAD),
 * dlinfo through mw_dl_tls, and on aarch64 maybe a TLS resolver). */
int mw_rbabi_find(void);

/* The calling thread's &ruby_current_ec: __tls_get_addr once per
 * thread, then remembered in our own (initial-exec) TLS;
 * &mw_rbabi.no_ec when the index is not known (module 0: __tls_get_addr
 * of it returns garbage).  Context: hook-safe, on a thread holding the
 * GVL (its TLS block for libruby exists); never allocates. */
static inline void **mw_ruby_ec_slot(void)
{
	void **slot = mw_tls.ruby_ec;

	if (__builtin_expect(!slot, 0))
		mw_tls.ruby_ec = slot = mw_rbabi.ec_index.module ?
					__tls_get_addr(&mw_rbabi.ec_index) :
					&mw_rbabi.no_ec;
	return slot;
}

/* Whether we read Ruby's frames ourselves (the layout is known: given
 * on 3.1, proven on 3.2+).  Atomic (relaxed): set once proven, cleared
 * by rbpos.c when our frame is not the one Ruby reports; a stale value
 * reads or asks once more. */
extern int mw_ruby_frames_known;

/* 3.2+: tries left at proving the layout (0 < n), -1 once proven, 0
 * when never to be tried again.  Written under the GVL only. */
extern int mw_ruby_layout_tries;

/* One try at proving the 3.2+ layout on the EC @ec of the calling
 * thread: the EC points to the thread whose self rb_thread_current()
 * returns, and the innermost Ruby frame's pc lies in its iseq's code,
 * every word read with copies that cannot fault.  Returns 1 when proven
 * (then sets mw_ruby_frames_known), else 0 and counts the try down.
 * Out of line and cold: its buffers would widen the frame of every
 * mw_ruby_pos.  Context: hook-safe, a Ruby thread holding the GVL,
 * while mw_ruby_layout_tries > 0; never allocates. */
__attribute__((cold)) int mw_rbabi_prove_layout(const uintptr_t *ec);

/* The words of a control frame (7 from 3.2; 3.1's are found the same
 * way), found by walking the whole stack of the EC @ec with each
 * candidate size: the one under which the distance to the stack's end
 * is a whole number of frames and every frame reads as one.  Returns
 * the size, 0 when not found yet, -1 when not found in enough stacks of
 * two frames or more (not to be asked again).  Cold.  Context:
 * hook-safe, a Ruby thread holding the GVL whose frames are known;
 * never allocates. */
__attribute__((cold)) int mw_rbabi_cfp_words(const uintptr_t *ec);

/* A heap String: a VALUE not special (immediates, nil and false are
 * small or tagged) whose RBasic flags say T_STRING; rb_string_value_ptr
 * on anything else could call #to_str.  Context: any, on a VALUE Ruby
 * just returned. */
static inline int is_string(uintptr_t v)
{
	return v > 4096 && !(v & 7) &&
	       (*(const uintptr_t *)v & T_MASK) == T_STRING;
}

#pragma GCC visibility pop

#endif
