/* SPDX-License-Identifier: MIT */
/* rbabi.c - see rbabi.h */
#define _GNU_SOURCE
#include "core/rbabi.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct mw_rbabi mw_rbabi;

/* Ruby's frame layout, read only while the misses find the frame Ruby
 * reports (mw_ruby_pos_location): on 3.1 through its exported
 * rb_vm_get_ruby_level_next_cfp, from 3.2 by our own walk. */
int mw_ruby_frames_known;

/* Ruby 3.2+ frames, walked by us: the EC comes from ruby_current_ec,
 * whose tls_index we read from rb_profile_frames' code, the frames are
 * 7 words each.  Trusted only once, read with copies that cannot fault
 * (process_vm_readv), the EC points to the thread whose self
 * rb_thread_current() returns and the innermost Ruby frame's pc lies
 * in its iseq's code. */
int mw_ruby_layout_tries;
#define LAYOUT_TRIES 100000	/* allocations without a Ruby frame */
#define TH_SELF 2		/* rb_thread_t: lt_node (2 words), self */
#define T_IMEMO 0x1a
#define IMEMO_ISEQ 7		/* (flags >> 12) & 15 of an iseq */

/* Copies @n bytes at @addr of our own memory; 0 where unmapped. */
static int peek(uintptr_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)addr, n };

	if (addr < 4096 || (addr & 7))
		return 0;
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) ==
	       (ssize_t)n;
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
 * whose EC @ec exists: 1 proven, 0 not yet, -1 disproved. */
static int find_layout(const uintptr_t *ec)
{
	uintptr_t words[16], th[TH_SELF + 1], self = mw_rbabi.thread_current();
	int m;

	if (!peek((uintptr_t)ec, words, sizeof(words)))
		return -1;
	for (m = EC_CFP + 1; m < 16; m++)
		if (peek(words[m], th, sizeof(th)) && th[TH_SELF] == self)
			return frames_check(words);
	return -1;
}

__attribute__((noinline, cold)) int mw_rbabi_prove_layout(const uintptr_t *ec)
{
	int r = find_layout(ec);

	if (r <= 0) {
		/* boot allocates much before Ruby code runs */
		mw_ruby_layout_tries -= r < 0 ? LAYOUT_TRIES / 4 : 1;
		if (mw_ruby_layout_tries < 0)
			mw_ruby_layout_tries = 0;
		return 0;
	}
	mw_ruby_layout_tries = -1;
	__atomic_store_n(&mw_ruby_frames_known, 1, __ATOMIC_RELAXED);
	return 1;
}

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

/* Whether the words at @cfp read, by peek, as a control frame: its
 * flags word (ep[0]) names a kind of frame and its pc, when it has one,
 * lies in its iseq's code. */
static int frame_reads(uintptr_t cfp)
{
	uintptr_t f[CFP_EP + 1], flags;

	if (!peek(cfp, f, sizeof(f)) ||
	    !peek(f[CFP_EP], &flags, sizeof(flags)) || !frame_magic_known(flags))
		return 0;
	return !f[CFP_PC] || pc_in_iseq_peeked(f[CFP_PC], f[CFP_ISEQ]);
}

/* Stacks of two frames or more walked before mw_rbabi_cfp_words gives
 * up (no walks then). */
static int cfp_word_tries;
#define CFP_WORD_TRIES 64

__attribute__((noinline, cold)) int mw_rbabi_cfp_words(const uintptr_t *ec)
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

/* 3.1: ruby_current_ec's TLS index, from the module that defines it. */
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
	if (ec && mw_dl_tls(handle, &modid, &block) == 0 &&
	    (char *)ec >= (char *)block) {
		mw_rbabi.ec_index.module = modid;
		mw_rbabi.ec_index.offset =
			(unsigned long)((char *)ec - (char *)block);
		ok = 1;
	}
	dlclose(handle);	/* NOLOAD handle: only drops our reference */
	return ok;
}

static void find_frames(void)
{
	const int *api = dlsym(RTLD_DEFAULT, "ruby_api_version");
	struct mw_rbabi *r = &mw_rbabi;

	*(void **)&r->ruby_level_cfp = dlsym(RTLD_DEFAULT,
					     "rb_vm_get_ruby_level_next_cfp");
	*(void **)&r->iseq_path = dlsym(RTLD_DEFAULT, "rb_iseq_path");
	*(void **)&r->string_ptr = dlsym(RTLD_DEFAULT, "rb_string_value_ptr");
	mw_ruby_frames_known = api && api[0] == 3 && api[1] == 1 &&
			       r->ruby_level_cfp && r->iseq_path &&
			       r->string_ptr;
}

/* Ruby 3.2+: the profiling API, where 3.1's symbols are not exported. */
static int find_profile_api(void)
{
	struct mw_rbabi *r = &mw_rbabi;
	const int *api;

	*(void **)&r->profile_frames = dlsym(RTLD_DEFAULT, "rb_profile_frames");
	*(void **)&r->frame_path = dlsym(RTLD_DEFAULT, "rb_profile_frame_path");
	*(void **)&r->string_ptr = dlsym(RTLD_DEFAULT, "rb_string_value_ptr");
	*(void **)&r->native_thread_p = dlsym(RTLD_DEFAULT,
					      "ruby_native_thread_p");
	/* optional: our own walk of the frames, checked as it goes */
	*(void **)&r->thread_current = dlsym(RTLD_DEFAULT, "rb_thread_current");
	*(void **)&r->iseq_path = dlsym(RTLD_DEFAULT, "rb_iseq_path");
	api = dlsym(RTLD_DEFAULT, "ruby_api_version");
	r->jit_frames_opaque = !api || api[0] >= 4;
	*(void **)&r->zjit_entry = dlsym(RTLD_DEFAULT, "rb_zjit_entry");
	mw_ruby_layout_tries =
		r->profile_frames && r->thread_current && r->iseq_path &&
		mw_rbpos_ec_from_code((const unsigned char *)r->profile_frames,
				      &r->ec_index)
		? LAYOUT_TRIES : 0;
	return r->profile_frames && r->frame_path && r->string_ptr &&
	       r->native_thread_p;
}

int mw_rbabi_find(void)
{
	struct mw_rbabi *r = &mw_rbabi;

	*(void **)&r->has_gvl = dlsym(RTLD_DEFAULT, "ruby_thread_has_gvl_p");
	*(void **)&r->source_location = dlsym(RTLD_DEFAULT,
					      "rb_source_location_cstr");
	r->vm_ptr = dlsym(RTLD_DEFAULT, "ruby_current_vm_ptr");
	*(void **)&r->gc_count = dlsym(RTLD_DEFAULT, "rb_gc_count");
	if (!r->has_gvl || !r->gc_count)
		return 0;
	*(void **)&r->stack_frames = dlsym(RTLD_DEFAULT, "rb_profile_frames");
	*(void **)&r->frame_label = dlsym(RTLD_DEFAULT,
					  "rb_profile_frame_label");
	*(void **)&r->frame_path = dlsym(RTLD_DEFAULT, "rb_profile_frame_path");
	if (r->source_location && r->vm_ptr &&
	    find_ec_index((void *)r->has_gvl))
		find_frames();
	else if (find_profile_api())
		r->via_profile = 1;
	else
		return 0;
	return 1;
}
