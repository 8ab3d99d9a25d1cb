/* SPDX-License-Identifier: MIT */
/* inhandler.c - what tests/safety/test_signals_in_search.py injects into
 * blocker inlibc: 1 when called inside that target's SIGUSR1 handler (a
 * place that looks safe, but whose interrupted code may hold a lock), 0
 * outside it, -1 in another process. */
#include <dlfcn.h>

int inhandler_probe(const char *arg)
{
	volatile int *flag = dlsym(RTLD_DEFAULT, "blocker_in_handler");

	(void)arg;
	return flag ? *flag : -1;
}
