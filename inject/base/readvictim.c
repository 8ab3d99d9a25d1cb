/* SPDX-License-Identifier: MIT */
/* readvictim.c - see readvictim.h */
#define _GNU_SOURCE
#include "base/readvictim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int mwi_read_victim(void)
{
	char buf[256];
	ssize_t n;

	/* no retry on EINTR: a read that fails is what the probe looks for */
	while ((n = read(0, buf, sizeof(buf))) > 0) {
		if (write(1, buf, (size_t)n) != n) {
			fprintf(stderr, "read victim: write: %s\n", strerror(errno));
			return 1;
		}
	}
	if (n < 0) {
		fprintf(stderr, "read victim: read: errno %d\n", errno);
		return 1;
	}
	return 0;
}
