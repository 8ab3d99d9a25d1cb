/* SPDX-License-Identifier: MIT */
/* A C target with many blocks live before any attach.
 *
 *   prelive N SIZE	allocates N blocks of SIZE bytes, prints "ready"
 *
 * then reads commands on stdin, one a line, each answered by one line:
 *   free PCT		frees PCT % of the first blocks: "freed K ns=N"
 *   alloc K SIZE	allocates K more blocks, kept: "allocated K"
 *   churn K		K malloc/free pairs of 64 bytes: "churned K ns=N"
 * (N: nanoseconds per free, per pair, for bench-like comparisons)
 * and on EOF frees everything, checks its blocks and prints "bye OK"
 * (exit 0) or "bye CORRUPT" (exit 1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char **blocks;
static size_t nblocks, cap;

/* noinline + -rdynamic: the dump names these */
__attribute__((noinline)) void *prelive_alloc(size_t size)
{
	unsigned char *p = malloc(size);

	if (p)
		memset(p, 0x5a, size < 16 ? size : 16);
	return p;
}

__attribute__((noinline)) void *window_alloc(size_t size)
{
	unsigned char *p = malloc(size);

	if (p)
		memset(p, 0x5a, size < 16 ? size : 16);
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int keep(void *p)
{
	if (nblocks == cap) {
		size_t n = cap ? cap * 2 : 1024;
		void *b = realloc(blocks, n * sizeof(*blocks));

		if (!b)
			return -1;
		blocks = b;
		cap = n;
	}
	blocks[nblocks++] = p;
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 0;
	size_t size = argc > 2 ? strtoul(argv[2], NULL, 0) : 64;
	size_t first = 0, i;	/* blocks[0 .. first) are freed */
	char line[128];
	int ok = 1;

	for (i = 0; i < n; i++)
		if (keep(prelive_alloc(size)))
			return 2;
	printf("ready blocks=%zu size=%zu\n", n, size);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long a = 0, b = 0;

		if (sscanf(line, "free %lu", &a) == 1) {
			size_t upto = first + (nblocks - first) * a / 100, k;
			uint64_t t0 = now_ns();

			for (k = first; k < upto; k++) {
				if (blocks[k] && blocks[k][0] != 0x5a)
					ok = 0;
				free(blocks[k]);
				blocks[k] = NULL;
			}
			printf("freed %zu ns=%.1f\n", upto - first,
			       (double)(now_ns() - t0) / (double)(upto > first ?
								upto - first : 1));
			first = upto;
		} else if (sscanf(line, "alloc %lu %lu", &a, &b) == 2) {
			for (i = 0; i < a; i++)
				if (keep(window_alloc(b)))
					ok = 0;
			printf("allocated %lu\n", a);
		} else if (sscanf(line, "churn %lu", &a) == 1) {
			uint64_t t0 = now_ns();

			for (i = 0; i < a; i++)
				free(window_alloc(64));
			printf("churned %lu ns=%.1f\n", a,
			       (double)(now_ns() - t0) / (double)(a ? a : 1));
		} else {
			printf("unknown\n");
		}
		fflush(stdout);
	}
	for (i = first; i < nblocks; i++) {
		if (blocks[i] && blocks[i][0] != 0x5a)
			ok = 0;
		free(blocks[i]);
	}
	free(blocks);
	printf("bye %s\n", ok ? "OK" : "CORRUPT");
	return ok ? 0 : 1;
}
