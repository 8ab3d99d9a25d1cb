/* SPDX-License-Identifier: MIT */
/* test_ectls.c - core/rbpos_ARCH.c's mw_rbpos_ec_from_code, which finds
 * Ruby 3.2+'s ruby_current_ec from the code that reads it, on a library
 * of ours built the two ways a libruby may be (ectls_lib.c): the index
 * it gives must lead __tls_get_addr to the variable in every thread. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/rbpos_arch.h"
#include "tap.h"

extern void *__tls_get_addr(struct tls_index *ti);

struct lib {
	void *(*read)(void);
	void **(*where)(void);
	struct tls_index ti;
	int same;
};

static void *in_thread(void *arg)
{
	struct lib *l = arg;

	l->same = __tls_get_addr(&l->ti) == (void *)l->where();
	return NULL;
}

/* @want: whether this CPU's decoder knows the library's sequence, read
 * from its function @fn */
static void try_fn(const char *dir, const char *name, const char *fn,
		   int want, const char *what)
{
	char path[PATH_MAX];
	struct lib l = { 0 };
	pthread_t t;
	void *h;
	int found;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		ok(0, "dlopen %s: %s", path, dlerror());
		return;
	}
	*(void **)&l.read = dlsym(h, fn);
	*(void **)&l.where = dlsym(h, "ec_where");
	found = mw_rbpos_ec_from_code((const unsigned char *)l.read, &l.ti);
	ok(found == want, "%s: %s", what, want ? "found" : "not decoded");
	if (!found || !want)
		return;
	ok(l.ti.module != 0 && __tls_get_addr(&l.ti) == (void *)l.where(),
	   "%s: the index leads to the variable in this thread", what);
	l.same = 0;
	ok(pthread_create(&t, NULL, in_thread, &l) == 0 &&
	   pthread_join(t, NULL) == 0 && l.same,
	   "%s: and in another thread", what);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(argv[0], '/');
	static const unsigned char nothing[64 * 4 + 64];

	(void)argc;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - argv[0]) : 1,
		 slash ? argv[0] : ".");
	try_fn(dir, "libectls.so", "ec_read", 1,
	       "-fPIC (x86-64: general dynamic; aarch64: TLS descriptor)");
#if defined(__aarch64__)
	try_fn(dir, "libectls-ie.so", "ec_read", 1,
	       "-ftls-model=initial-exec");
	try_fn(dir, "libectls.so", "ec_read_by_call", 1,
	       "through its first call, a getter (Ruby 3.3+'s GET_EC())");
	try_fn(dir, "libectls-ie.so", "ec_read_by_call", 1,
	       "initial-exec, through its first call, a getter");
	try_fn(dir, "libectls.so", "ec_read_by_other_call", 0,
	       "its first call leads to no getter (a call before the read)");
#else
	/* (x86-64 Ruby reads the EC inline: no call is followed) */
	try_fn(dir, "libectls-ie.so", "ec_read", 0,
	       "-ftls-model=initial-exec (decoded on aarch64 only)");
#endif
	{
		struct tls_index ti = { 7, 7 };

		ok(mw_rbpos_ec_from_code(nothing, &ti) == 0 &&
		   ti.module == 7 && ti.offset == 7,
		   "code without the sequence: 0, the index unchanged");
	}
	return tap_done();
}
