/* SPDX-License-Identifier: MIT */
/* A malloc/free storm in N threads (argv[1], default 4) that checks its
 * own data; exits 0 on stdin EOF, or after argv[2] seconds (default 5). */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

/* exported (-rdynamic): dumps name it */
void *storm(void *arg);
void *storm(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *keep[64] = { 0 };
	unsigned long n = 0;

	while (!stop) {
		unsigned i = (unsigned)rand_r(&seed) % 64;
		size_t sz = 16 + (size_t)rand_r(&seed) % 2048;

		if (keep[i]) {
			if (((unsigned char *)keep[i])[0] != (i & 0xff))
				abort();	/* corrupted */
			free(keep[i]);
		}
		keep[i] = malloc(sz);
		memset(keep[i], (int)(i & 0xff), sz);
		n++;
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return (void *)n;
}

/* Returns at stdin's EOF (or error), or at @end. */
static void wait_for_eof(struct timespec end)
{
	for (;;) {
		struct pollfd p = { 0, POLLIN, 0 };
		struct timespec now;
		char buf[256];
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (end.tv_sec - now.tv_sec) * 1000 +
		     (end.tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0)
			return;
		if (poll(&p, 1, ms > 1000 ? 1000 : (int)ms) > 0 &&
		    read(0, buf, sizeof(buf)) <= 0)
			return;
	}
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 4;
	double secs = argc > 2 ? atof(argv[2]) : 5;
	pthread_t t[64];
	unsigned long total = 0;
	struct timespec end;

	if (nthreads < 1 || nthreads > 64)
		return 2;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, storm, (void *)(uintptr_t)(i + 1));
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)secs;
	wait_for_eof(end);
	stop = 1;
	for (int i = 0; i < nthreads; i++) {
		void *n;

		pthread_join(t[i], &n);
		total += (unsigned long)n;
	}
	printf("done %d threads ok\n", nthreads);
	return total ? 0 : 1;
}
