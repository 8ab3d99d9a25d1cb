/* A single thread inside libc's memset/memcpy nearly all the time: it
 * clears and refills a big buffer (64 MiB by default, argv[1] in MiB) in
 * a loop and checks samples of each copy.  No malloc after the start,
 * no thread blocked in a syscall: stdin is polled without waiting
 * between rounds.  With "malloc" as argv[2], each round also mallocs and
 * frees a few blocks.  SIGINT is counted, not fatal: nothing of ours may
 * send it.  Prints "ready"; when stdin closes prints "copies ok
 * sigint=N" and exits 0 (1 with "CORRUPT" at the first bad copy). */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t sigints;

static void on_sigint(int sig)
{
	(void)sig;
	sigints++;
}

/* stdin closed (or in error): time to finish */
static int stdin_closed(void)
{
	struct pollfd p = { 0, POLLIN, 0 };
	char buf[256];

	if (poll(&p, 1, 0) <= 0)
		return 0;
	return read(0, buf, sizeof(buf)) <= 0;
}

int main(int argc, char **argv)
{
	size_t n = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
	unsigned char *src = malloc(n), *dst = malloc(n);
	unsigned long rounds = 0;
	int churn = argc > 2 && !strcmp(argv[2], "malloc");
	size_t i;

	signal(SIGINT, on_sigint);
	if (!n || !src || !dst)
		return 2;
	for (i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7 + i / 4096);
	memcpy(dst, src, n);	/* fault the pages in before "ready" */
	fputs("ready\n", stdout);
	fflush(stdout);
	while (!stdin_closed()) {
		memset(dst, 0, n);
		memcpy(dst, src, n);
		for (i = rounds % 4093; i < n; i += n / 61 + 1)
			if (dst[i] != src[i]) {
				printf("CORRUPT at %zu round %lu\n", i, rounds);
				return 1;
			}
		if (dst[n - 1] != src[n - 1]) {
			printf("CORRUPT at the end, round %lu\n", rounds);
			return 1;
		}
		for (i = 0; churn && i < 64; i++)
			free(malloc(16 + (rounds * 64 + i) % 4000));
		rounds++;
	}
	fprintf(stderr, "rounds=%lu\n", rounds);
	printf("copies ok sigint=%d\n", (int)sigints);
	return 0;
}
