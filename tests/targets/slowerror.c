/* SPDX-License-Identifier: MIT */
/* slowerror.c - a target in which fetching a failed dlopen's message is
 * slow: its malloc, called from libc's own code (dlerror formats the
 * message with asprintf, which mallocs from libc), sleeps 3 s once.
 * The loader's mallocs (ld.so calls it too, during dlopen) and its own
 * do not sleep.  An injector that calls dlerror in it is inside that
 * call for 3 s: long enough to be killed or to time out there.
 *
 * Prints "ready", then blocks in read() on stdin (a safe point); prints
 * "slow malloc" (write(2) to stdout) when the sleep begins, and at the
 * end of stdin "slowerror ok slept=N".
 *
 * Before "ready" it fails one dlopen of its own and never asks dlerror:
 * glibc keeps that thread's error record, so the injected dlopen reuses
 * it rather than mallocing one from libc (which would sleep in dlopen
 * itself, not in dlerror). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static unsigned long libc_lo, libc_hi;	/* libc's code */
static volatile int armed, slept;

static void find_libc(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    perms[2] == 'x' && strstr(line, "/libc.so")) {
			libc_lo = lo;
			libc_hi = hi;
		}
	}
	if (f)
		fclose(f);
}

static void maybe_sleep(void *caller)
{
	static const char msg[] = "slow malloc\n";
	struct timespec ts = { 3, 0 };

	if (!armed || slept || (unsigned long)caller < libc_lo ||
	    (unsigned long)caller >= libc_hi)
		return;
	slept = 1;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		return;
	while (nanosleep(&ts, &ts))
		;
}

void *malloc(size_t n)
{
	maybe_sleep(__builtin_return_address(0));
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	maybe_sleep(__builtin_return_address(0));
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	maybe_sleep(__builtin_return_address(0));
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

int main(void)
{
	char buf[256];

	find_libc();
	if (dlopen("/nonexistent/libslowerror-probe.so", RTLD_NOW))
		return 2;
	fputs("ready\n", stdout);
	fflush(stdout);
	armed = 1;
	while (read(0, buf, sizeof(buf)) > 0)
		;
	armed = 0;
	printf("slowerror ok slept=%d\n", slept);
	return 0;
}
