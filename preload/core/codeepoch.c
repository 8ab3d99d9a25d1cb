/* SPDX-License-Identifier: MIT */
/* codeepoch.c - see codeepoch.h */
#include "core/codeepoch.h"

uint32_t mw_code_epochs[1u << MW_CODE_EPOCH_BITS];

int mw_code_forget(uintptr_t start, uint64_t len)
{
	uintptr_t page, last;

	if (!len || len >> MW_CODE_PAGE_SHIFT >= (1u << MW_CODE_EPOCH_BITS))
		return -1;
	last = (start + len) >> MW_CODE_PAGE_SHIFT;
	for (page = start >> MW_CODE_PAGE_SHIFT; page <= last; page++)
		__atomic_add_fetch(mw_code_epoch_slot(page << MW_CODE_PAGE_SHIFT),
				   1, __ATOMIC_RELAXED);
	return 0;
}
