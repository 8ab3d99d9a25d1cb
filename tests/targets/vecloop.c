/* A tight loop with live vector registers and no syscalls: any register
 * or XSTATE damage done by an attach changes the printed checksum.
 * Runs ITER iterations (argv[1]); prints "ready" first and "sum N" last. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 400000000L;
	double a = 1.0, b = 1.000000001, c = 0.5, d = 0.25;
	unsigned long sum = 0;

	printf("ready\n");
	fflush(stdout);
	for (long i = 0; i < iters; i++) {
		a = a * b + 1e-9;	/* kept in xmm registers */
		c = c * 0.999999999 + d * 1e-9;
		d = d + a * 1e-12;
		if ((i & 0xfffff) == 0)
			sum += (unsigned long)(a * 1000.0) ^ (unsigned long)(c * 1e6);
	}
	printf("sum %lu %.9f %.9f %.9f\n", sum, a, c, d);
	return 0;
}
