/* SPDX-License-Identifier: MIT */
/* cleak.c - a C target that leaks at one known function, built with
 * musl-gcc (build/musl/targets/cleak) for the tests of another C
 * library than the build's (tests/test_musl*.py).  Prints "ready PID",
 * then obeys one command per line on stdin, answering each:
 *   leak N SIZE   keeps N blocks of SIZE bytes, each from leak_here()
 *   churn N       allocates and frees N blocks of 100 bytes
 * On EOF prints "bye BYTES" (the bytes kept, each block checked) and
 * exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* noinline + -rdynamic: the dump names this function */
__attribute__((noinline)) void *leak_here(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 'L', n);
	return p;
}

__attribute__((noinline)) void churn_here(int n)
{
	while (n-- > 0) {
		char *volatile p = malloc(100);

		if (p)
			p[0] = 1;
		free(p);
	}
}

static struct block {
	unsigned char *p;
	size_t n;
} *kept;
static size_t nkept, cap;

static int leak(long n, long size)
{
	for (; n > 0; n--) {
		if (nkept == cap) {
			struct block *k;

			cap = cap ? cap * 2 : 1024;
			k = realloc(kept, cap * sizeof(*kept));
			if (!k)
				return -1;
			kept = k;
		}
		kept[nkept].p = leak_here((size_t)size);
		if (!kept[nkept].p)
			return -1;
		kept[nkept++].n = (size_t)size;
	}
	return 0;
}

/* The bytes kept, 0 if one of them changed. */
static unsigned long checked_bytes(void)
{
	unsigned long sum = 0;
	size_t i, j;

	for (i = 0; i < nkept; i++) {
		for (j = 0; j < kept[i].n; j++)
			if (kept[i].p[j] != 'L')
				return 0;
		sum += kept[i].n;
	}
	return sum;
}

int main(void)
{
	char line[256];
	long a, b;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "leak %ld %ld", &a, &b) == 2) {
			if (leak(a, b))
				return 1;
			printf("leaked %ld\n", a);
		} else if (sscanf(line, "churn %ld", &a) == 1) {
			churn_here((int)a);
			printf("churned\n");
		}
	}
	printf("bye %lu\n", checked_bytes());
	return 0;
}
