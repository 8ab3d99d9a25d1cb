/* SPDX-License-Identifier: MIT */
/* A non-Ruby target: allocates at a known function, checks that failed
 * allocations keep libc's contract (NULL, errno ENOMEM, a failed realloc
 * leaves the block intact), prints a line. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* noinline + -rdynamic: the dump names this function */
__attribute__((noinline)) void *leak_here(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

static int failures_keep_contract(unsigned char *block)
{
	/* volatile: the compiler must not see (or refuse) the sizes */
	volatile size_t huge = (size_t)1 << 62, half = SIZE_MAX / 2;
	void *p, *q;
	int ok;

	errno = 0;
	p = malloc(huge);
	ok = !p && errno == ENOMEM;
	errno = 0;
	p = calloc(half, 4);	/* n * m overflows */
	ok = ok && !p && errno == ENOMEM;
	errno = 0;
	q = realloc(block, huge);
	ok = ok && !q && errno == ENOMEM && block[0] == 1 && block[4095] == 1;
	return ok;
}

int main(void)
{
	static void *keep[1000];
	int i;

	for (i = 0; i < 1000; i++)
		keep[i] = leak_here(4096);
	for (i = 0; i < 500; i++)
		free(keep[i]);
	printf("HELLO_FROM_C %d enomem=%d\n", (int)(keep[999] != NULL),
	       failures_keep_contract(keep[999]));
	free(keep[999]);	/* still ours after the failed realloc */
	return 0;
}
