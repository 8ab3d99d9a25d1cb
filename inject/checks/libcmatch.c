/* SPDX-License-Identifier: MIT */
/* libcmatch.c - see libcmatch.h */
#define _GNU_SOURCE
#include "checks/libcmatch.h"
#include "base/elfsym.h"
#include "base/exitcodes.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum mwi_libc mwi_libc_of_target(pid_t pid, const struct mwi_maps *m)
{
	char path[PATH_MAX + 32];
	uint64_t v;

	if (mwi_maps_libc_is_musl(m->libc_path))
		return MWI_LIBC_MUSL;
	if (!mwi_maps_local_file(pid, m->libc_path, m->libc_ino, path,
				 sizeof(path)) &&
	    !mwi_elf_symbol(path, "gnu_get_libc_version", &v))
		return MWI_LIBC_GLIBC;
	return MWI_LIBC_UNKNOWN;
}

static int libc_needed(const char *name, void *arg)
{
	enum mwi_libc *libc = arg;

	if (!strcmp(name, "libc.so.6"))
		*libc = MWI_LIBC_GLIBC;
	else if (!strcmp(name, "libc.so") ||
		 !strncmp(name, "libc.musl-", 10) ||
		 !strncmp(name, "ld-musl-", 8))
		*libc = MWI_LIBC_MUSL;
	return *libc != MWI_LIBC_UNKNOWN;
}

enum mwi_libc mwi_libc_of_file(const char *path)
{
	enum mwi_libc libc = MWI_LIBC_UNKNOWN;

	if (mwi_elf_needed(path, libc_needed, &libc))
		return MWI_LIBC_UNKNOWN;
	return libc;
}

const char *mwi_libc_name(enum mwi_libc libc)
{
	return libc == MWI_LIBC_GLIBC ? "glibc" :
	       libc == MWI_LIBC_MUSL ? "musl libc" : "an unknown C library";
}

int mwi_libc_check(pid_t pid, const struct mwi_maps *m, const char *lib,
		   struct mwi_failure *why)
{
	char inside[PATH_MAX + 32];
	enum mwi_libc its, built;

	snprintf(inside, sizeof(inside), "/proc/%d/root%s", (int)pid, lib);
	built = mwi_libc_of_file(inside);
	if (built == MWI_LIBC_UNKNOWN)
		built = mwi_libc_of_file(lib);
	if (built == MWI_LIBC_UNKNOWN)
		return 0;	/* unreadable here: dlopen will say */
	its = mwi_libc_of_target(pid, m);
	if (its == MWI_LIBC_UNKNOWN || its == built)
		return 0;
	return mwi_failf(why, EX_LIBC, "libc", 0,
			 "process %d runs on %s (%s) and %s is built for "
			 "%s: load a build for %s instead (%s)", (int)pid,
			 mwi_libc_name(its), m->libc_path, lib,
			 mwi_libc_name(built), mwi_libc_name(its),
			 its == MWI_LIBC_MUSL ?
			 "make build-musl: build/musl/lib/libmwrap.so" :
			 "make: build/lib/libmwrap.so");
}
