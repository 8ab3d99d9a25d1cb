/* SPDX-License-Identifier: MIT */
/* libdeep.so for deepbind.c: keeps and drops blocks through the malloc
 * its own lookup scope finds.  Linked against libdeepalloc and loaded with
 * RTLD_DEEPBIND, its GOT reaches libdeepalloc while the rest of the process
 * runs glibc's malloc: a second allocator in one process. */
#include <stdlib.h>
#include <string.h>

#define MAX_KEPT 100000
static void *kept[MAX_KEPT];
static int nkept;

int deep_keep(int n, size_t size)
{
	while (n-- > 0 && nkept < MAX_KEPT) {
		void *p = malloc(size);

		if (!p)
			return -1;
		memset(p, 7, size);
		kept[nkept++] = p;
	}
	return nkept;
}

void deep_drop(void)
{
	while (nkept > 0)
		free(kept[--nkept]);
}
