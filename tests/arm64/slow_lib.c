/* SPDX-License-Identifier: MIT */
/* slow_lib.c - a library whose constructor says "in constructor" on the
 * target's standard output, then sleeps MWRAP_TEST_CTOR_MS milliseconds
 * (default 3000): tests/arm64/test_inject_calls.py kills the injector
 * while the injected dlopen() is inside it. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void slow_init(void)
{
	const char *ms = getenv("MWRAP_TEST_CTOR_MS");
	long n = ms ? atol(ms) : 3000;
	struct timespec ts = { n / 1000, (n % 1000) * 1000000 };

	(void)!write(1, "in constructor\n", 15);
	while (nanosleep(&ts, &ts))
		;
}

int slow_ready(const char *arg)
{
	(void)arg;
	return 5;
}
