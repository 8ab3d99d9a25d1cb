/* SPDX-License-Identifier: MIT */
/* A process whose memory map never holds still: NTHREADS threads
 * (argv[1], default 4) each keep 64 slots of anonymous memory and, in a
 * tight loop, replace a random slot: munmap the old mapping (after
 * checking the bytes it wrote there), mmap a new one of 1 page to 64 MiB
 * (sizes spread evenly in log scale), write a tag at both ends and split
 * it with mprotect (a read-only page, now and then a PROT_NONE one).
 * Neighbouring mappings with the same protection merge and split again,
 * so lines of /proc/PID/maps appear, vanish, grow and shrink all over
 * the address space, several hundred of them at any time: a reader
 * takes many read() calls to get through the file, and the map changes
 * between them.
 *
 * The main thread blocks in read() on stdin (a safe point for an
 * injector) and counts SIGINT (nothing of ours may send it).  Prints
 * "ready" once every thread churns; when stdin closes, stops them and
 * prints "churn ok sigint=N" (rounds on stderr) and exits 0; 1 with
 * "CORRUPT" at the first bad tag, 2 when a call fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 64
#define MAX_THREADS 64

static volatile sig_atomic_t sigints;
static volatile int stop;
static unsigned long rounds[MAX_THREADS];
static int started;		/* threads past their first round */

struct slot {
	unsigned char *p;
	size_t len;
	unsigned char tag;
};

static void on_sigint(int sig)
{
	(void)sig;
	sigints++;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Exits the whole process: a failed call is the target's own fault, a
 * bad tag means someone wrote into memory that is ours. */
static void die(int code, const char *what, long thread)
{
	printf("%s in thread %ld: %s\n", what, thread, strerror(errno));
	fflush(stdout);
	_exit(code);
}

static void release(struct slot *s, long id)
{
	if (!s->p)
		return;
	if (s->p[0] != s->tag || s->p[s->len - 1] != s->tag)
		die(1, "CORRUPT", id);
	if (munmap(s->p, s->len))
		die(2, "munmap", id);
	s->p = NULL;
}

static void fill(struct slot *s, uint64_t r, long id)
{
	size_t page = 4096, pages = 1 + r % (1ul << ((r >> 32) % 15));
	unsigned char *p;

	s->len = pages * page;
	p = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		die(2, "mmap", id);
	s->tag = (unsigned char)(r >> 8) | 1;
	p[0] = p[s->len - 1] = s->tag;
	/* a page in the middle read-only: three lines instead of one */
	if (pages >= 3 && mprotect(p + page * (1 + r % (pages - 2)), page,
				   (r >> 16) % 4 ? PROT_READ : PROT_NONE))
		die(2, "mprotect", id);
	s->p = p;
}

static void *churn(void *arg)
{
	long id = (long)arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	struct slot slots[SLOTS] = { { 0 } };
	int i;

	for (i = 0; i < SLOTS; i++)
		fill(&slots[i], next_rand(&seed), id);
	__atomic_add_fetch(&started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		uint64_t r = next_rand(&seed);
		struct slot *s = &slots[r % SLOTS];

		release(s, id);
		fill(s, next_rand(&seed), id);
		rounds[id]++;
	}
	for (i = 0; i < SLOTS; i++)
		release(&slots[i], id);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4, i;
	pthread_t th[MAX_THREADS];
	unsigned long total = 0;
	char buf[256];

	if (n < 1 || n > MAX_THREADS)
		return 2;
	signal(SIGINT, on_sigint);
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, churn, (void *)i))
			return 2;
	while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < n)
		usleep(1000);
	fputs("ready\n", stdout);
	fflush(stdout);
	for (;;) {
		ssize_t got = read(0, buf, sizeof(buf));

		if (got == 0 || (got < 0 && errno != EINTR))
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		total += rounds[i];
	}
	fprintf(stderr, "rounds=%lu\n", total);
	printf("churn ok sigint=%d\n", (int)sigints);
	return 0;
}
