/* SPDX-License-Identifier: MIT */
/* slowctor.c - a library whose constructor runs for 3 s, during which
 * the thread that dlopen()s it holds the loader lock (glibc runs
 * constructors under it).  Injected with a shorter --timeout, the call
 * is still inside the loader when the injector gives up: the test that
 * uses it checks that the target's own dlopen()s go on afterwards. */
#include <time.h>

static volatile int loaded;

__attribute__((constructor)) static void slow_init(void)
{
	struct timespec ts = { 3, 0 };

	while (nanosleep(&ts, &ts))
		;
	loaded = 1;
}

/* what the injector calls once the library is in */
int slowctor_ready(const char *arg)
{
	(void)arg;
	return loaded ? 7 : -1;
}
