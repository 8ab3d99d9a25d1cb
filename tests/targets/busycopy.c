/* SPDX-License-Identifier: MIT */
/* A single thread inside libc's memset/memcpy nearly all the time: it
 * clears and refills a big buffer (64 MiB by default, argv[1] in MiB) in
 * a loop and checks samples of each copy.  No malloc after the start,
 * no thread blocked in a syscall: stdin is polled without waiting
 * between rounds.  With "malloc" as argv[2], each round also mallocs and
 * frees a few blocks.  With "realloc", a round is instead a block moved
 * back and forth by realloc (glibc's memcpy called inside realloc, under
 * the arena's lock, nearly all the time), its bytes checked.  SIGINT is counted, not fatal: nothing of ours may
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

/* Grows a block that another one pins in place: realloc copies it (a
 * new chunk, memcpy, the old one freed); checks what the copy kept.
 * Both freed after: the next round finds the same layout. */
static int realloc_round(unsigned long round)
{
	size_t small = 60000, big = 120000, i;
	unsigned char *p = malloc(small), *q;
	void *pin = malloc(2000);	/* beyond tcache: right after p */
	int bad = 0;

	if (!p || !pin)
		return -1;
	for (i = 0; i < small; i += 997)
		p[i] = (unsigned char)(i + round);
	q = realloc(p, big);
	if (!q) {
		free(p);
		bad = 1;
	}
	for (i = 0; q && i < small; i += 997)
		bad |= q[i] != (unsigned char)(i + round);
	free(q);
	free(pin);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	size_t n = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
	unsigned char *src = malloc(n), *dst = malloc(n);
	unsigned long rounds = 0;
	int churn = argc > 2 && !strcmp(argv[2], "malloc");
	int moves = argc > 2 && !strcmp(argv[2], "realloc");
	size_t i;

	signal(SIGINT, on_sigint);
	if (!n || !src || !dst)
		return 2;
	for (i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7 + i / 4096);
	memcpy(dst, src, n);	/* fault the pages in before "ready" */
	fputs("ready\n", stdout);
	fflush(stdout);
	while ((moves && rounds % 256) || !stdin_closed()) {
		if (moves) {
			if (realloc_round(rounds++)) {
				printf("CORRUPT in round %lu\n", rounds);
				return 1;
			}
			continue;
		}
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
