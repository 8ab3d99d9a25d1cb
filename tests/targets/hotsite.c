/* SPDX-License-Identifier: MIT */
/* THREADS threads (argv[1]) each make COUNT allocations (argv[2]) of 100
 * bytes from one call site, hot_alloc, all at once (a barrier starts
 * them), free nine in ten and keep the rest until exit: the counts in a
 * dump are exact whatever the threads' interleaving. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t start;
static long count;

/* exported (-rdynamic): dumps name it */
void *hot_alloc(void);
__attribute__((noinline)) void *hot_alloc(void)
{
	void *p = malloc(100);

	__asm__ volatile("" : : "r"(p) : "memory");	/* not a tail call */
	return p;
}

static void *work(void *arg)
{
	void **kept = arg;

	pthread_barrier_wait(&start);
	for (long i = 0; i < count; i++) {
		void *p = hot_alloc();

		if (!p)
			abort();
		if (i % 10 == 0)
			kept[i / 10] = p;
		else
			free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t[64];
	void **kept[64];

	count = argc > 2 ? atol(argv[2]) : 100000;
	if (n < 1 || n > 64 || count < 1)
		return 2;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		kept[i] = calloc((size_t)count / 10 + 1, sizeof(void *));
		pthread_create(&t[i], NULL, work, kept[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("hotsite %d x %ld\n", n, count);
	return 0;
}
