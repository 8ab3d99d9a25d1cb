/* SPDX-License-Identifier: MIT */
/* hidesym.c - a C library without some functions, on glibc: preloaded
 * (before libmwrap.so, or into a target to attach to), it answers dlsym
 * of every name listed in MWTEST_HIDE (comma-separated) with NULL, from
 * any handle, as musl answers "pvalloc"; with MWTEST_NO_NEXT=1, every
 * dlsym(RTLD_NEXT), as musl's from a dlopen'ed library (which searches
 * only the objects loaded after it).  Every other lookup goes to glibc's
 * dlsym, with RTLD_NEXT taken as libc's own definitions: what it finds
 * for libmwrap.so (nothing after it defines these but libc), without
 * depending on who called.  (tests/test_musl_resolve.py)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static void *(*real_dlsym)(void *, const char *);
static void *libc;

/* Whether @name is listed in MWTEST_HIDE. */
static int hidden(const char *name)
{
	const char *list = getenv("MWTEST_HIDE");
	size_t n = strlen(name);

	while (list && *list) {
		size_t len = strcspn(list, ",");

		if (len == n && !strncmp(list, name, n))
			return 1;
		list += len + (list[len] == ',');
	}
	return 0;
}

void *dlsym(void *handle, const char *name)
{
	/* glibc 2.34 moved dlsym into libc.so.6 at this version; both
	 * Debian 12 and 13 are newer */
	if (!real_dlsym)
		*(void **)&real_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!libc)
		libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (!real_dlsym || hidden(name))
		return NULL;
	if (handle == RTLD_NEXT && getenv("MWTEST_NO_NEXT"))
		return NULL;
	return real_dlsym(handle == RTLD_NEXT ? libc : handle, name);
}
