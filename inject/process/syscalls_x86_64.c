/* SPDX-License-Identifier: MIT */
/* syscalls_x86_64.c - syscalls.h's per-libc list on x86-64 (the lists
 * themselves are syscalls.def's). */
#include "process/syscalls.h"

/* glibc's choice between clone3 and clone is the table's */
const struct mwi_sc_call *mwi_sc_calls_for(pid_t pid)
{
	(void)pid;
	return mwi_sc_calls;
}
