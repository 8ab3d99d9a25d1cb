/* SPDX-License-Identifier: MIT */
/* syscalls.c - see syscalls.h: the lists of syscalls.def, with the rows
 * and the numbers of the CPU built for (arch.h's MWI_SC_COLUMN). */
#include "process/syscalls.h"
#include "process/arch.h"

#include <sys/syscall.h>

#define REQ MWI_SC_REQUIRED
#define FEAT MWI_SC_FEATURE
#define OPT MWI_SC_OPTIONAL

/* PICK(1, x) is x, PICK(0, x) nothing: a row's column says whether it
 * is this CPU's (its SYS_ name may not even exist on the other). */
#define PICK(column, ...) PICK_(column, __VA_ARGS__)
#define PICK_(column, ...) PICK_##column(__VA_ARGS__)
#define PICK_1(...) __VA_ARGS__
#define PICK_0(...)

#define SC(name, x86_64, aarch64, user, need, effect) \
	PICK(MWI_SC_COLUMN(x86_64, aarch64), \
	     { SYS_##name, #name, user, need, effect },)
#define SAFE(name, x86_64, aarch64)
const struct mwi_sc_call mwi_sc_calls[] = {
#include "process/syscalls.def"
	/* a tracer skips a syscall with -1, and the filter still runs:
	 * the injector does at each call it starts from a syscall stop */
	{ -1, "skipped-syscall", "the injector, between calls", OPT, "none" },
	{ 0, NULL, NULL, REQ, NULL },
};
#undef SC
#undef SAFE

_Static_assert(sizeof(mwi_sc_calls) / sizeof(mwi_sc_calls[0]) <=
	       MWI_SC_MAX_CALLS, "raise MWI_SC_MAX_CALLS");

#define SC(name, x86_64, aarch64, user, need, effect)
#define SAFE(name, x86_64, aarch64) \
	PICK(MWI_SC_COLUMN(x86_64, aarch64), SYS_##name,)
const long mwi_blocking_safe[] = {
#include "process/syscalls.def"
};
#undef SC
#undef SAFE
const size_t mwi_nblocking_safe =
	sizeof(mwi_blocking_safe) / sizeof(mwi_blocking_safe[0]);

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
