/* SPDX-License-Identifier: MIT */
/* rbpos.c - see rbpos.h */
#define _GNU_SOURCE
#include "core/rbpos.h"
#include "core/rbpos_arch.h"
#include "core/codeepoch.h"
#include "core/tls.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Written once by mw_ruby_init (the constructor or the helper, before
 * tracking is enabled: mw_track_enable's release store publishes it and
 * the function pointers below); read-only afterwards. */
int mw_ruby_present;
/* Atomic (relaxed): stored by any Ruby thread in a hook, read by hooks
 * and readers; a stale value ages a block by one GC less. */
uint64_t mw_ruby_generation;

static int (*has_gvl)(void);
static const char *(*source_location)(int *line);
static void **vm_ptr;			/* &ruby_current_vm_ptr */
static size_t (*gc_count)(void);
static uintptr_t *(*ruby_level_cfp)(void *ec, void *cfp);
static uintptr_t (*iseq_path)(uintptr_t iseq);
static char *(*string_ptr)(volatile uintptr_t *str);

/* Ruby 3.2 and later export neither the EC nor rb_source_location_cstr:
 * there the location comes from the public profiling API (the frames
 * stackprof reads from a signal handler: no allocation, no lock). */
static int via_profile;
/* Set once the process is exiting: from 3.2 nothing we can read says
 * that Ruby's VM is gone (ruby_current_vm_ptr is not exported), while
 * "has the GVL" stays true on the main thread after ruby_vm_destruct
 * (which keeps the main thread's struct) and rb_gc_count then reads a
 * NULL VM.  Our destructor runs in exit before liburcu's (we depend on
 * it), whose calloc crashed there. */
static int vm_gone;
static int (*profile_frames)(int start, int limit, uintptr_t *frames,
			     int *lines);
static uintptr_t (*frame_path)(uintptr_t frame);
/* --stacks: rb_profile_frames and rb_profile_frame_label, on every
 * Ruby (3.1 to 3.4 export them); NULL when absent */
static int (*stack_frames)(int start, int limit, uintptr_t *frames,
			   int *lines);
static uintptr_t (*frame_label)(uintptr_t frame);
static int (*native_thread_p)(void);
/* Ruby 4+: a frame running ZJIT code keeps its pc and iseq elsewhere
 * (its cfp's jit_return says so), so mw_ruby_walk gives up there. */
static int jit_frames_opaque;
#define PROFILE_DEPTH 8		/* C frames above the innermost Ruby one */
#define PROFILE_FIRST 2		/* frames asked for first */

/* Ruby's frame layout, read only while the misses find the frame Ruby
 * reports (mw_ruby_pos_location): on 3.1 through its exported
 * rb_vm_get_ruby_level_next_cfp, from 3.2 by our own walk (below). */
static int frames_known;
#define EC_STACK 0	/* rb_execution_context_t: vm_stack, */
#define EC_STACK_SIZE 1	/* vm_stack_size (in VALUEs), */
#define EC_CFP 2	/* cfp, ... (3.1 to 4.0) */
#define CFP_PC 0	/* rb_control_frame_t: pc, sp, iseq, self, ep, ... */
#define CFP_ISEQ 2
#define CFP_EP 4
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

/* Ruby 3.2+ frames, walked by us: the EC comes from ruby_current_ec
 * (below), whose tls_index we read from rb_profile_frames' code, the
 * frames are 7 words each.  Trusted only once, read with copies that
 * cannot fault (process_vm_readv), the EC points to the thread whose
 * self rb_thread_current() returns and the innermost Ruby frame's pc
 * lies in its iseq's code. */
static uintptr_t (*thread_current)(void);
static int layout_tries;	/* 0 < n: tries left; -1: found */
#define LAYOUT_TRIES 100000	/* allocations without a Ruby frame */
#define TH_SELF 2		/* rb_thread_t: lt_node (2 words), self */
#define CFP_WORDS 7		/* pc, sp, iseq, self, ep, block_code, */
#define CFP_JIT_RETURN 6	/* jit_return: 3.2 to 4.0 */
#define T_MASK 0x1f
#define T_IMEMO 0x1a
#define IMEMO_ISEQ 7		/* (flags >> 12) & 15 of an iseq */
/* Each Ruby miss compares our frame with Ruby's: a mismatch is not
 * cached (eval'd code in a method: Ruby names the method's file), and
 * too many of them mean our frames are not Ruby's. */
static unsigned long frames_matched, frames_mismatched;

/* Copies @n bytes at @addr of our own memory; 0 where unmapped. */
static int peek(uintptr_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)addr, n };

	if (addr < 4096 || (addr & 7))
		return 0;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
	       (ssize_t)n;
}

/* The innermost frame with a pc from @cfp (the EC's current frame) to
 * @end, at most PROFILE_DEPTH frames, as rb_profile_frames walks them:
 * it gives the innermost frame no line (so names its caller) when the
 * JIT runs it, and so do we.  Returns the frame or NULL. */
static const uintptr_t *ruby_frame(uintptr_t cfp, uintptr_t end)
{
	int n;

	for (n = 0; n < PROFILE_DEPTH && cfp + CFP_WORDS * 8 <= end;
	     n++, cfp += CFP_WORDS * 8) {
		const uintptr_t *f = (const uintptr_t *)cfp;

		if (!f[CFP_PC])
			continue;	/* a C method's (or block's) frame */
		return n == 0 && f[CFP_JIT_RETURN] ? NULL : f;
	}
	return NULL;
}

/* Whether @pc lies in the code of @iseq, an iseq (imemo of type iseq),
 * every word read by peek. */
static int pc_in_iseq_peeked(uintptr_t pc, uintptr_t iseq)
{
	uintptr_t words[ISEQ_BODY + 1];
	struct iseq_body_head body;

	return peek(iseq, words, sizeof(words)) &&
	       (words[0] & T_MASK) == T_IMEMO &&
	       ((words[0] >> 12) & 15) == IMEMO_ISEQ &&
	       peek(words[ISEQ_BODY], &body, sizeof(body)) &&
	       pc >= body.iseq_encoded &&
	       pc <= body.iseq_encoded + body.iseq_size * 8ul;
}

/* Whether EC words @ec hold a frame pointer inside their stack, from
 * which the walk finds a Ruby frame whose pc lies in its iseq's code,
 * every word read by peek: 1 yes, 0 no Ruby frame yet (Ruby boots,
 * a C thread), -1 no. */
static int frames_check(const uintptr_t *ec)
{
	uintptr_t cfp = ec[EC_CFP], end = ec[EC_STACK] + ec[EC_STACK_SIZE] * 8;
	uintptr_t f[CFP_WORDS];
	int n;

	if (!ec[EC_STACK_SIZE] || ec[EC_STACK_SIZE] > (1ul << 28) ||
	    cfp < ec[EC_STACK] || cfp >= end)
		return -1;
	for (n = 0; n < PROFILE_DEPTH && cfp + sizeof(f) <= end;
	     n++, cfp += sizeof(f)) {
		if (!peek(cfp, f, sizeof(f)))
			return -1;
		if (f[CFP_PC])
			break;
	}
	if (n == PROFILE_DEPTH || cfp + sizeof(f) > end)
		return 0;
	return pc_in_iseq_peeked(f[CFP_PC], f[CFP_ISEQ]) ? 1 : -1;
}

/* One try at proving the 3.2+ layout, on a Ruby thread holding the GVL
 * whose EC @ec exists: 1 proven, 0 not yet, -1 disproved.  Out of line
 * (cold): its buffers would widen the frame of every mw_ruby_pos. */
static __attribute__((noinline, cold)) int find_layout(void **ec)
{
	uintptr_t words[16], th[TH_SELF + 1], self = thread_current();
	int m;

	if (!peek((uintptr_t)ec, words, sizeof(words)))
		return -1;
	for (m = EC_CFP + 1; m < 16; m++)
		if (peek(words[m], th, sizeof(th)) && th[TH_SELF] == self)
			return frames_check(words);
	return -1;
}

/* 3.2+: the innermost Ruby frame's pc and iseq into @pos, when known. */
static void walk_frames(struct mw_ruby_pos *pos, const uintptr_t *ec)
{
	const uintptr_t *f;

	if (layout_tries > 0) {
		int r = find_layout((void **)ec);

		if (r <= 0) {
			/* boot allocates much before Ruby code runs */
			layout_tries -= r < 0 ? LAYOUT_TRIES / 4 : 1;
			if (layout_tries < 0)
				layout_tries = 0;
			return;
		}
		layout_tries = -1;
		__atomic_store_n(&frames_known, 1, __ATOMIC_RELAXED);
	}
	if (ec[EC_CFP] < ec[EC_STACK])
		return;
	f = ruby_frame(ec[EC_CFP], ec[EC_STACK] + ec[EC_STACK_SIZE] * 8);
	if (f) {
		pos->pc = f[CFP_PC];
		pos->iseq = f[CFP_ISEQ];
	}
}

/* ruby_current_ec is a TLS variable: its address differs per thread, so
 * it is reached like compiled code would, through __tls_get_addr
 * (struct tls_index: rbpos_arch.h). */
extern void *__tls_get_addr(struct tls_index *ti);
static struct tls_index ec_index;

/* What ec_slot gives where the EC's TLS index is not known: no EC. */
static void *no_ec;

/* The calling thread's &ruby_current_ec: __tls_get_addr once per
 * thread, then remembered in our own (initial-exec) TLS; &no_ec when the
 * index is not known (module 0: __tls_get_addr of it returns garbage). */
static inline void **ec_slot(void)
{
	void **slot = mw_tls.ruby_ec;

	if (__builtin_expect(!slot, 0))
		mw_tls.ruby_ec = slot = ec_index.module ?
					__tls_get_addr(&ec_index) : &no_ec;
	return slot;
}

static int find_ec_index(void *any_ruby_symbol)
{
	Dl_info info;
	void *handle, *ec, *block = NULL;
	size_t modid = 0;
	int ok = 0;

	if (!dladdr(any_ruby_symbol, &info))
		return 0;
	handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		handle = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		return 0;
	ec = dlsym(handle, "ruby_current_ec");
	if (ec && dlinfo(handle, RTLD_DI_TLS_MODID, &modid) == 0 &&
	    modid && dlinfo(handle, RTLD_DI_TLS_DATA, &block) == 0 &&
	    block && (char *)ec >= (char *)block) {
		ec_index.module = modid;
		ec_index.offset = (unsigned long)((char *)ec - (char *)block);
		ok = 1;
	}
	dlclose(handle);	/* NOLOAD handle: only drops our reference */
	return ok;
}

static void find_frames(void)
{
	const int *api = dlsym(RTLD_DEFAULT, "ruby_api_version");

	*(void **)&ruby_level_cfp = dlsym(RTLD_DEFAULT,
					  "rb_vm_get_ruby_level_next_cfp");
	*(void **)&iseq_path = dlsym(RTLD_DEFAULT, "rb_iseq_path");
	*(void **)&string_ptr = dlsym(RTLD_DEFAULT, "rb_string_value_ptr");
	frames_known = api && api[0] == 3 && api[1] == 1 && ruby_level_cfp &&
		       iseq_path && string_ptr;
}

/* Ruby 3.2+: the profiling API, where 3.1's symbols are not exported. */
static int find_profile_api(void)
{
	const int *api;

	*(void **)&profile_frames = dlsym(RTLD_DEFAULT, "rb_profile_frames");
	*(void **)&frame_path = dlsym(RTLD_DEFAULT, "rb_profile_frame_path");
	*(void **)&string_ptr = dlsym(RTLD_DEFAULT, "rb_string_value_ptr");
	*(void **)&native_thread_p = dlsym(RTLD_DEFAULT, "ruby_native_thread_p");
	/* optional: our own walk of the frames, checked as it goes */
	*(void **)&thread_current = dlsym(RTLD_DEFAULT, "rb_thread_current");
	*(void **)&iseq_path = dlsym(RTLD_DEFAULT, "rb_iseq_path");
	api = dlsym(RTLD_DEFAULT, "ruby_api_version");
	jit_frames_opaque = !api || api[0] >= 4;
	layout_tries = profile_frames && thread_current && iseq_path &&
		       mw_rbpos_ec_from_code((const unsigned char *)profile_frames,
					     &ec_index)
		       ? LAYOUT_TRIES : 0;
	return profile_frames && frame_path && string_ptr && native_thread_p;
}

int mw_ruby_init(void)
{
	if (mw_ruby_present)
		return 1;
	*(void **)&has_gvl = dlsym(RTLD_DEFAULT, "ruby_thread_has_gvl_p");
	*(void **)&source_location = dlsym(RTLD_DEFAULT,
					   "rb_source_location_cstr");
	vm_ptr = dlsym(RTLD_DEFAULT, "ruby_current_vm_ptr");
	*(void **)&gc_count = dlsym(RTLD_DEFAULT, "rb_gc_count");
	if (!has_gvl || !gc_count)
		return 0;
	*(void **)&stack_frames = dlsym(RTLD_DEFAULT, "rb_profile_frames");
	*(void **)&frame_label = dlsym(RTLD_DEFAULT, "rb_profile_frame_label");
	*(void **)&frame_path = dlsym(RTLD_DEFAULT, "rb_profile_frame_path");
	if (source_location && vm_ptr && find_ec_index((void *)has_gvl)) {
		find_frames();
	} else if (find_profile_api()) {
		via_profile = 1;
	} else {
		return 0;
	}
	__atomic_store_n(&mw_ruby_present, 1, __ATOMIC_RELEASE);
	return 1;
}

void mw_ruby_generation_refresh(void)
{
	if (__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE) && gc_count &&
	    !__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE))
		__atomic_store_n(&mw_ruby_generation, gc_count(),
				 __ATOMIC_RELAXED);
}

int mw_ruby_pos_present(struct mw_ruby_pos *pos)
{
	void **ec;

	if (via_profile) {
		/* From 3.2 "has the GVL" reads the thread through the EC
		 * itself: true only once the EC exists. */
		if (__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE) || !has_gvl())
			return 0;
		__atomic_store_n(&mw_ruby_generation, gc_count(),
				 __ATOMIC_RELAXED);
		pos->pc = pos->iseq = 0;
		if (__atomic_load_n(&frames_known, __ATOMIC_RELAXED) ||
		    layout_tries > 0) {
			ec = ec_slot();
			if (*ec)
				walk_frames(pos, *ec);
		}
		return 1;
	}
	/* "has the GVL" is only asked of Ruby threads: it reads Ruby's own
	 * thread-local pointer and is false for every other thread. */
	if (!has_gvl() || !*vm_ptr)
		return 0;
	/* During ruby_setup() the GVL is held before the EC exists. */
	ec = ec_slot();
	if (!*ec)
		return 0;
	__atomic_store_n(&mw_ruby_generation, gc_count(), __ATOMIC_RELAXED);
	pos->pc = pos->iseq = 0;
	if (__atomic_load_n(&frames_known, __ATOMIC_RELAXED)) {
		void **e = *ec;
		uintptr_t *cfp = ruby_level_cfp(e, e[EC_CFP]);

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

/* A heap String: a VALUE not special (immediates, nil and false are
 * small or tagged) whose RBasic flags say T_STRING; rb_string_value_ptr
 * on anything else could call #to_str. */
#define T_STRING 0x05
static int is_string(uintptr_t v)
{
	return v > 4096 && !(v & 7) && (*(const uintptr_t *)v & T_MASK) == T_STRING;
}

/* The innermost frame with a line (C methods' frames have 0), asked
 * of the frames in @start .. @start + @limit - 1.  Ruby computes a line
 * for every Ruby frame it returns (a search in the iseq's line table),
 * so the frames are asked for a few at a time. */
static const char *profile_location_in(int start, int limit, int *line)
{
	uintptr_t frames[PROFILE_DEPTH];
	int lines[PROFILE_DEPTH], n, i;

	n = profile_frames(start, limit, frames, lines);
	for (i = 0; i < n; i++) {
		volatile uintptr_t str;

		if (lines[i] <= 0)
			continue;
		str = frame_path(frames[i]);
		if (!is_string(str))
			return NULL;
		*line = lines[i];
		return string_ptr(&str);
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
	const char *p = via_profile ? profile_location(line) :
				      source_location(line);

	if (pos->pc) {
		/* Ruby found its location through the same frame: the path
		 * is that iseq's own string */
		volatile uintptr_t str = pos->iseq ? iseq_path(pos->iseq) : 0;
		const char *ours = is_string(str) ? string_ptr(&str) : NULL;
		int same = p && ours == p;

		if (same)
			frames_matched++;
		/* 3.2+: Ruby names no line for a frame of line 0 (ruby_setup's
		 * "<main>"), where our walk stops */
		if (!same && (!via_profile ||
			      (p && ++frames_mismatched > 2 * frames_matched + 16)))
			__atomic_store_n(&frames_known, 0, __ATOMIC_RELAXED);
		/* 3.2+: for code eval'd with a file name of its own inside a
		 * method, Ruby gives the method's file beside the eval'd
		 * line; the frame's own iseq names the eval's file */
		if (!same && p && ours && via_profile &&
		    __atomic_load_n(&frames_known, __ATOMIC_RELAXED))
			p = ours;
		if (!same)
			pos->pc = 0;
	}
	if (!p)
		return 0;
	*path = p;
	return 1;
}

int mw_ruby_stack(struct mw_ruby_stack *st, int max)
{
	/* C frames take places too: ask for some more than wanted */
	uintptr_t frames[2 * MW_RUBY_STACK_MAX];
	int lines[2 * MW_RUBY_STACK_MAX], n, i;

	st->n = 0;
	if (!stack_frames || !frame_path || !string_ptr)
		return 0;
	if (max > MW_RUBY_STACK_MAX)
		max = MW_RUBY_STACK_MAX;
	n = stack_frames(0, 2 * max, frames, lines);
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
	volatile uintptr_t str = frame_path(frame);

	if (!is_string(str))
		return 0;
	*path = string_ptr(&str);
	*label = NULL;
	if (frame_label) {
		volatile uintptr_t lab = frame_label(frame);

		if (is_string(lab))
			*label = string_ptr(&lab);
	}
	return *path != NULL;
}

/* The words of a control frame (7 from 3.2; 3.1's are found the same
 * way), found once by walking a whole stack with each candidate size:
 * the one under which the distance to the stack's end is a whole number
 * of frames and every frame reads as one, its flags word (ep[0]) naming a
 * kind of frame and its pc, when it has one, lying in its iseq's code.
 * 0: not found yet; -1: not found in CFP_WORD_TRIES stacks of two frames
 * or more (no walks). */
static int cfp_words, cfp_word_tries;
#define CFP_WORD_TRIES 64

/* The kinds of frame (VM_FRAME_MAGIC_*: method, block, class, top,
 * cfunc, ifunc, eval, rescue, dummy), as their flags word holds them. */
static int frame_magic_known(uintptr_t flags)
{
	static const unsigned magic[] = { 0x1111, 0x2222, 0x3333, 0x4444,
					  0x5555, 0x6666, 0x7777, 0x7888,
					  0x7999 };
	unsigned i;

	if ((flags & 1) == 0)
		return 0;
	for (i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (((flags & FRAME_MAGIC_MASK) >> 16) == magic[i])
			return 1;
	return 0;
}

/* Whether the words at @cfp read, by peek, as a control frame. */
static int frame_reads(uintptr_t cfp)
{
	uintptr_t f[CFP_EP + 1], flags;

	if (!peek(cfp, f, sizeof(f)) ||
	    !peek(f[CFP_EP], &flags, sizeof(flags)) || !frame_magic_known(flags))
		return 0;
	return !f[CFP_PC] || pc_in_iseq_peeked(f[CFP_PC], f[CFP_ISEQ]);
}

static __attribute__((noinline, cold)) int find_cfp_words(const uintptr_t *ec)
{
	uintptr_t end = ec[EC_STACK] + ec[EC_STACK_SIZE] * 8, cfp;
	int words, frames;

	/* fewer than two frames of the largest size prove nothing (Ruby
	 * boots on one) */
	if (end - ec[EC_CFP] < 2 * (CFP_EP + 6) * 8ul)
		return 0;
	for (words = CFP_EP + 2; words <= CFP_EP + 5; words++) {
		if ((end - ec[EC_CFP]) % (words * 8ul))
			continue;
		frames = 0;
		for (cfp = ec[EC_CFP]; cfp < end; cfp += words * 8ul, frames++)
			if (!frame_reads(cfp))
				break;
		if (cfp == end && frames >= 2)
			return words;
	}
	return ++cfp_word_tries < CFP_WORD_TRIES ? 0 : -1;
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

	if (!__atomic_load_n(&frames_known, __ATOMIC_RELAXED))
		return 0;
	ec = (const uintptr_t *)*ec_slot();
	if (!ec)
		return 0;
	if (!words)
		words = cfp_words = find_cfp_words(ec);
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

		if (jit_frames_opaque && f[words - 1])
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

__attribute__((destructor)) static void ruby_exiting(void)
{
	__atomic_store_n(&vm_gone, 1, __ATOMIC_RELEASE);
}

const char *mw_ruby_frames_how(void)
{
	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return "none";
	return __atomic_load_n(&frames_known, __ATOMIC_RELAXED) ? "read"
								 : "asked";
}

int mw_ruby_thread_has_ec_sigsafe(int need_gvl)
{
	void **ec;

	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	if (need_gvl && !has_gvl())
		return 0;
	if (via_profile)	/* 3.2+: a Ruby thread is one with an EC */
		return !__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE) &&
		       native_thread_p();
	ec = __tls_get_addr(&ec_index);
	return *ec != NULL;
}
