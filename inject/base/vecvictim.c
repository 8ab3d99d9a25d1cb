/* SPDX-License-Identifier: MIT */
/* vecvictim.c - see vecvictim.h: the loop; the registers are
 * vecvictim_ARCH.c's */
#define _GNU_SOURCE
#include "base/vecvictim.h"

#include <poll.h>
#include <stdio.h>
#include <unistd.h>

/* Has standard input closed (or been written)?  Polled between blocks:
 * one thread only, so that gdb's call can only run on the one whose
 * vector registers are live. */
static int stdin_done(void)
{
	struct pollfd p = { 0, POLLIN, 0 };

	return poll(&p, 1, 0) != 0;
}

int mwi_vector_victim(void)
{
	const char *which;
	mwi_vector_check check = mwi_vector_check_for_cpu(&which);
	unsigned long blocks = 0;

	printf("ready %s\n", which);
	fflush(stdout);
	while (!stdin_done()) {
		if (!check()) {
			printf("CORRUPT %s after %lu blocks\n", which, blocks);
			fflush(stdout);
			return 1;
		}
		blocks++;
	}
	printf("ok %lu\n", blocks);
	return 0;
}
