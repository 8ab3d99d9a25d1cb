/* SPDX-License-Identifier: MIT */
/* churn - the C target of bench/callgrind: N malloc+free pairs from one
 * call site (malloc(1000), freed at once), nothing else.
 *
 *   build/bench/churn [N]          (default 100000)
 *
 * Run twice with different N under callgrind, preloaded and not: the
 * difference of the differences, over the difference of N, is what the
 * tracer adds to one pair, start-up and exit left out. */
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, i;

	for (i = 0; i < n; i++) {
		void *p = malloc(1000);

		/* keep the pair: the compiler may not drop it */
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	return 0;
}
