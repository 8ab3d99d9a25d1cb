/* SPDX-License-Identifier: MIT */
/* jit.c - see jit.h */
#include "core/jit.h"

struct mw_jit_range mw_jit_text[2];
static unsigned jit_crates;
static const volatile unsigned char *yjit_flag;
static void *const volatile *zjit_flag;

struct mw_site *mw_jit_site(void)
{
	return mw_site_for_addr(mw_jit_text[0].start);
}

void mw_jit_set(const struct mw_jit_range text[2], unsigned crates,
		const volatile unsigned char *yjit_on,
		void *const volatile *zjit_entry)
{
	jit_crates = crates;
	yjit_flag = yjit_on;
	zjit_flag = zjit_entry;
	mw_jit_text[1] = text[1];
	mw_jit_text[0].start = text[0].start;
	__atomic_store_n(&mw_jit_text[0].len, text[0].len, __ATOMIC_RELEASE);
}

const char *mw_jit_name(const struct mw_site *s)
{
	if (s->key || !mw_jit_text[0].len || s->addr != mw_jit_text[0].start)
		return NULL;
	if ((jit_crates & MW_JIT_ZJIT) && zjit_flag && *zjit_flag)
		return "ZJIT compiler";
	if (jit_crates == MW_JIT_YJIT ||
	    ((jit_crates & MW_JIT_YJIT) && yjit_flag && *yjit_flag))
		return "YJIT compiler";
	return "JIT compiler";
}
