/* A non-Ruby target: allocates at a known function, prints a line. */
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

int main(void)
{
	static void *keep[1000];
	int i;

	for (i = 0; i < 1000; i++)
		keep[i] = leak_here(4096);
	for (i = 0; i < 500; i++)
		free(keep[i]);
	printf("HELLO_FROM_C %d\n", (int)(keep[999] != NULL));
	return 0;
}
