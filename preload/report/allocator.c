/* SPDX-License-Identifier: MIT */
/* allocator.c - see allocator.h */
#define _GNU_SOURCE
#include "report/allocator.h"
#include "core/real.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

static char name[96];	/* written once by mw_allocator_detect */
static int glibc;

static void set_name(const char *a, const char *b)
{
	size_t n = strlen(a), m = b ? strlen(b) : 0;

	if (n >= sizeof(name))
		n = sizeof(name) - 1;
	memcpy(name, a, n);
	if (m > sizeof(name) - 1 - n)
		m = sizeof(name) - 1 - n;
	if (m)
		memcpy(name + n, b, m);
	name[n + m] = '\0';
}

/* @sym, when the object that defines malloc defines it too. */
static void *beside_malloc(const char *sym, const Dl_info *malloc_obj)
{
	void *p = dlsym(RTLD_DEFAULT, sym);
	Dl_info info;

	if (!p || !dladdr(p, &info) || info.dli_fbase != malloc_obj->dli_fbase)
		return NULL;
	return p;
}

void mw_allocator_detect(void)
{
	int (*mallctl)(const char *, void *, size_t *, void *, size_t);
	const char *(*tc_version)(int *, int *, const char **);
	const char *base;
	Dl_info info;

	if (!mw_real.malloc || !dladdr(*(void **)&mw_real.malloc, &info) ||
	    !info.dli_fname) {
		set_name("unknown", NULL);
		return;
	}
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	*(void **)&mallctl = beside_malloc("mallctl", &info);
	*(void **)&tc_version = beside_malloc("tc_version", &info);
	if (mallctl) {
		const char *v = NULL;
		size_t len = sizeof(v);

		/* "5.3.0-0-g54eaed1d...": the release is enough */
		if (mallctl("version", &v, &len, NULL, 0) == 0 && v) {
			char rel[32];
			size_t n = strcspn(v, "-");

			if (n >= sizeof(rel))
				n = sizeof(rel) - 1;
			memcpy(rel, v, n);
			rel[n] = '\0';
			set_name("jemalloc ", rel);
		} else {
			set_name("jemalloc", NULL);
		}
	} else if (tc_version) {
		int major = 0, minor = 0;
		const char *patch = NULL;
		const char *v = tc_version(&major, &minor, &patch);

		/* "gperftools 2.10" */
		v = v && strchr(v, ' ') ? strchr(v, ' ') + 1 : "";
		set_name("tcmalloc ", v);
	} else if (mw_libc_musl_path(info.dli_fname)) {
		set_name("musl", NULL);	/* mallocng; no mallinfo */
	} else if (strncmp(base, "libc.so", 7) == 0) {
		glibc = 1;
		set_name("glibc", NULL);
	} else {
		set_name("other ", base);
	}
}

const char *mw_allocator_name(void)
{
	return name;
}

int mw_allocator_is_glibc(void)
{
	return glibc;
}
