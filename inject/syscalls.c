/* SPDX-License-Identifier: MIT */
/* syscalls.c - see syscalls.h */
#include "syscalls.h"

const char *mwi_sc_need_name(enum mwi_sc_need need)
{
	static const char *const name[] = { "required", "feature",
					    "optional" };

	return name[need];
}

void mwi_sc_list(FILE *out)
{
	const struct mwi_sc_call *c;

	for (c = mwi_sc_calls; c->name; c++)
		fprintf(out, "%d %s %s %s\n", c->nr, c->name,
			mwi_sc_need_name(c->need), c->user);
}

int mwi_syscall_blocking_safe(long nr)
{
	for (size_t i = 0; i < mwi_nblocking_safe; i++)
		if (mwi_blocking_safe[i] == nr)
			return 1;
	return 0;
}
