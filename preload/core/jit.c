/* SPDX-License-Identifier: MIT */
/* jit.c - see jit.h */
#include "core/jit.h"

uintptr_t mw_jit_start, mw_jit_len;
static unsigned jit_crates;
static const volatile unsigned char *yjit_flag;
static void *const volatile *zjit_flag;

struct mw_site *mw_jit_site(void)
{
	return mw_site_for_addr(mw_jit_start);
}

void mw_jit_set(uintptr_t start, uintptr_t len, unsigned crates,
		const volatile unsigned char *yjit_on,
		void *const volatile *zjit_entry)
{
	jit_crates = crates;
	yjit_flag = yjit_on;
	zjit_flag = zjit_entry;
	mw_jit_start = start;
	__atomic_store_n(&mw_jit_len, len, __ATOMIC_RELEASE);
}

const char *mw_jit_name(const struct mw_site *s)
{
	if (s->key || !mw_jit_len || s->addr != mw_jit_start)
		return NULL;
	if ((jit_crates & MW_JIT_ZJIT) && zjit_flag && *zjit_flag)
		return "ZJIT compiler";
	if (jit_crates == MW_JIT_YJIT ||
	    ((jit_crates & MW_JIT_YJIT) && yjit_flag && *yjit_flag))
		return "YJIT compiler";
	return "JIT compiler";
}
