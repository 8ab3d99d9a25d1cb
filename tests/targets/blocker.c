/* SPDX-License-Identifier: MIT */
/* Safety-matrix target: one mode per hazard for an injector.  Prints
 * "ready", then behaves as its mode says until stdin closes, then prints
 * one result line and exits 0 (1 when it detects damage).
 *
 *   read      blocks in read() on stdin, echoes "got LINE"
 *   epoll     epoll_wait() on stdin, tolerant of EINTR, echoes lines
 *   ppoll     ppoll() on stdin, tolerant of EINTR, echoes lines
 *   sleep S   nanosleep S seconds, prints "slept S.SS"
 *   idle      pause()s, never allocates, until SIGTERM
 *   df        loop with the direction flag set in a window, checks data
 *   dlloop    a thread dlopen()s and dlclose()s libz in a loop
 *   threads   threads created and joined as fast as possible
 *   signals   SIGALRM every 1 ms and a SIGUSR1 handler, counted
 *   urg       its own SIGURG handler, counted
 *   seccomp   a seccomp filter (denying memfd_create), then like read
 *   inlibc [MS]  always inside libc (memfrob over 512 MiB, not a leaf
 *             routine: no safe point), until SIGTERM (no syscall in its
 *             loop: one it is stopped in may be a safe point); counts
 *             SIGUSR1 and SIGRTMIN, its SIGUSR1 handler spinning MS ms in
 *             code of its own (a safe-looking place inside a handler)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long alrm, usr1, urg, rtmin;
static double spin_ms;

static void say(const char *s)
{
	fputs(s, stdout);
	fflush(stdout);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits for stdin to close, without allocating. */
static void *wait_stdin(void *arg)
{
	char buf[256];

	(void)arg;
	while (read(0, buf, sizeof(buf)) > 0)
		;
	stop = 1;
	return NULL;
}

static void background_stdin_watch(void)
{
	pthread_t t;

	pthread_create(&t, NULL, wait_stdin, NULL);
}

static int echo_lines(int mode)
{
	char buf[512];
	unsigned long eintr = 0, lines = 0;
	int ep = -1;
	struct epoll_event ev = { .events = EPOLLIN };

	if (mode == 'e') {
		ep = epoll_create1(0);
		epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
	}
	for (;;) {
		ssize_t n;

		if (mode == 'e' || mode == 'p') {
			int r;

			if (mode == 'e') {
				r = epoll_wait(ep, &ev, 1, 100);
			} else {
				struct pollfd p = { 0, POLLIN, 0 };
				struct timespec ts = { 0, 100000000 };

				r = ppoll(&p, 1, &ts, NULL);
			}
			if (r < 0 && errno == EINTR) {
				eintr++;	/* documented: a ptrace stop */
				continue;
			}
			if (r <= 0)
				continue;
		}
		n = read(0, buf, sizeof(buf) - 1);
		if (n < 0 && errno == EINTR) {
			eintr++;
			continue;
		}
		if (n <= 0)
			break;
		buf[n] = '\0';
		printf("got %s", buf);
		fflush(stdout);
		lines++;
	}
	printf("done lines=%lu eintr=%lu\n", lines, eintr);
	return 0;
}

static int sleep_for(double secs)
{
	struct timespec ts = { (time_t)secs, (long)((secs - (long)secs) * 1e9) };
	double t0 = now();

	say("ready\n");
	nanosleep(&ts, NULL);
	printf("slept %.2f\n", now() - t0);
	return 0;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int idle(void)
{
	signal(SIGTERM, on_term);
	say("ready\n");
	while (!stop)
		pause();
	say("idle ok\n");
	return 0;
}

/* Copies backwards with DF set, then clears it: an injected call made
 * while DF=1 that did not clear it would run memcpy/strlen backwards. */
static int direction_flag(void)
{
	static char src[4096], dst[4096];
	unsigned long rounds = 0;

	for (int i = 0; i < 4096; i++)
		src[i] = (char)(i * 7);
	background_stdin_watch();
	say("ready\n");
	while (!stop) {
		char *s = src + sizeof(src) - 1, *d = dst + sizeof(dst) - 1;
		size_t n = sizeof(src);

#if defined(__x86_64__)
		__asm__ volatile("std\n\trep movsb\n\tcld"
				 : "+S"(s), "+D"(d), "+c"(n) : : "memory", "cc");
#else
		/* no direction flag: a plain backward copy */
		while (n--)
			*d-- = *s--;
#endif
		if (memcmp(src, dst, sizeof(src))) {
			say("CORRUPT copy\n");
			return 1;
		}
		memset(dst, 0, sizeof(dst));
		rounds++;
	}
	printf("df ok %s\n", rounds ? "rounds" : "none");
	return 0;
}

static void *dl_loop(void *arg)
{
	unsigned long *n = arg;

	while (!stop) {
		void *h = dlopen("libz.so.1", RTLD_NOW);

		if (h)
			dlclose(h);
		(*n)++;
	}
	return NULL;
}

static int dlloop(void)
{
	pthread_t t;
	unsigned long n = 0;

	pthread_create(&t, NULL, dl_loop, &n);
	say("ready\n");
	wait_stdin(NULL);
	pthread_join(t, NULL);
	printf("dlloop ok %s\n", n ? "ran" : "idle");
	return 0;
}

static void *nothing(void *arg)
{
	return arg;
}

static int thread_churn(void)
{
	unsigned long n = 0;

	background_stdin_watch();
	say("ready\n");
	while (!stop) {
		pthread_t t;

		if (pthread_create(&t, NULL, nothing, NULL) == 0) {
			pthread_join(t, NULL);
			n++;
		}
	}
	printf("threads ok %s\n", n ? "ran" : "none");
	return 0;
}

static void on_alrm(int sig) { (void)sig; alrm++; }
static void on_usr1(int sig) { (void)sig; usr1++; }
static void on_urg(int sig) { (void)sig; urg++; }

static int signals(void)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct sigaction sa = { 0 };

	sa.sa_handler = on_alrm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	say("ready\n");
	wait_stdin(NULL);
	printf("signals alrm=%lu usr1=%lu\n", alrm, usr1);
	return 0;
}

/* 1 while on_usr1_spin runs (read by tests/targets/inhandler.c) */
volatile int blocker_in_handler;

static void on_usr1_spin(int sig)
{
	struct timespec ts;
	double until;

	(void)sig;
	blocker_in_handler = 1;
	usr1++;
	/* clock_gettime is the vDSO's: no syscall, no libc code to speak of */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	until = ts.tv_sec + ts.tv_nsec / 1e9 + spin_ms / 1000;
	do
		clock_gettime(CLOCK_MONOTONIC, &ts);
	while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
	blocker_in_handler = 0;
}

static void on_rtmin(int sig) { (void)sig; rtmin++; }

/* One long memfrob: 2 MiB of memory mapped 256 times in a row (0.3 s a
 * call here).  Between two calls the thread is outside libc, where it
 * stalls on what the sweep evicted: with 64 MiB swept a call, 16 stops
 * in 150000 landed there (a search of 200 stops found a safe point 2
 * times in 100); with this, 8 in 300000.  NULL if it cannot be mapped. */
static char *long_sweep(size_t *len)
{
	size_t chunk = 2 << 20, n = 256, i;
	int fd = memfd_create("blocker-sweep", 0);
	char *base;

	if (fd < 0 || ftruncate(fd, (off_t)chunk))
		return NULL;
	base = mmap(NULL, chunk * n, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	for (i = 0; i < n; i++)
		if (mmap(base + i * chunk, chunk, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			return NULL;
	close(fd);
	*len = chunk * n;
	return base;
}

static int in_libc(void)
{
	struct sigaction sa = { 0 };
	size_t len;
	char *buf = long_sweep(&len);

	sa.sa_handler = on_usr1_spin;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_rtmin;
	sigaction(SIGRTMIN, &sa, NULL);
	signal(SIGTERM, on_term);
	if (!buf)
		return perror("blocker: mapping its sweep"), 1;
	say("ready\n");
	while (!stop)
		memfrob(buf, len);
	printf("inlibc usr1=%lu rt=%lu\n", usr1, rtmin);
	return 0;
}

static int urg_handler(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_urg;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGURG, &sa, NULL);
	echo_lines('r');
	printf("urg=%lu\n", urg);
	return 0;
}

static int seccomp_filtered(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 2;
	}
	say("ready\n");
	return echo_lines('r');
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "read"))
		return say("ready\n"), echo_lines('r');
	if (!strcmp(mode, "epoll"))
		return say("ready\n"), echo_lines('e');
	if (!strcmp(mode, "ppoll"))
		return say("ready\n"), echo_lines('p');
	if (!strcmp(mode, "sleep"))
		return sleep_for(argc > 2 ? atof(argv[2]) : 2);
	if (!strcmp(mode, "idle"))
		return idle();
	if (!strcmp(mode, "df"))
		return direction_flag();
	if (!strcmp(mode, "dlloop"))
		return dlloop();
	if (!strcmp(mode, "threads"))
		return thread_churn();
	if (!strcmp(mode, "signals"))
		return signals();
	if (!strcmp(mode, "urg"))
		return say("ready\n"), urg_handler();
	if (!strcmp(mode, "seccomp"))
		return seccomp_filtered();
	if (!strcmp(mode, "inlibc")) {
		spin_ms = argc > 2 ? atof(argv[2]) : 0;
		return in_libc();
	}
	fprintf(stderr, "usage: blocker MODE\n");
	return 2;
}
