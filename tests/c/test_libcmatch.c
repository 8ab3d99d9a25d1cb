/* SPDX-License-Identifier: MIT */
/* Unit tests for telling C libraries apart (inject/checks/libcmatch.c,
 * inject/process/maps.c's libc names): a libc by the names maps gives
 * it (glibc's, Debian's musl, Alpine's musl), and a library by its
 * DT_NEEDED (libmwrap.so as built here; build/musl/targets/cleak, if
 * musl-gcc made it; a static file: none).  Paths are found from
 * argv[0] (build/tests/). */
#define _GNU_SOURCE
#include "checks/libcmatch.h"
#include "process/maps.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

static void test_names(void)
{
	static const struct {
		const char *path;
		int musl;
	} cases[] = {
		{ "/usr/lib/x86_64-linux-gnu/libc.so.6", 0 },
		{ "/lib/aarch64-linux-gnu/libc.so.6", 0 },
		{ "/lib/x86_64-linux-gnu/libc-2.31.so", 0 },
		{ "/usr/lib/x86_64-linux-musl/libc.so", 1 },
		{ "/lib/ld-musl-x86_64.so.1", 1 },
		{ "/lib/ld-musl-aarch64.so.1", 1 },
		{ "/lib/libc.musl-x86_64.so.1", 1 },
		{ "/srv/root/lib/ld-musl-x86_64.so.1", 1 },
		{ "ld-musl-x86_64.so.1", 1 },
		{ "/opt/musl-notes/libc.so.6", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ok(mwi_maps_libc_is_musl(cases[i].path) == cases[i].musl,
		   "%s is %s's", cases[i].path, cases[i].musl ? "musl" : "not musl");
}

static void test_files(const char *build)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/lib/libmwrap.so", build);
	ok(mwi_libc_of_file(path) == MWI_LIBC_GLIBC,
	   "libmwrap.so as built here needs glibc");
	snprintf(path, sizeof(path), "%s/musl/targets/cleak", build);
	if (access(path, R_OK) == 0)
		ok(mwi_libc_of_file(path) == MWI_LIBC_MUSL,
		   "a musl-gcc program needs musl libc");
	else
		ok(1, "# SKIP no musl-gcc program (musl-tools not installed)");
	snprintf(path, sizeof(path), "%s/tests/no-such-file", build);
	ok(mwi_libc_of_file(path) == MWI_LIBC_UNKNOWN,
	   "a missing file: unknown");
	ok(mwi_libc_of_file("/proc/self/status") == MWI_LIBC_UNKNOWN,
	   "not an ELF file: unknown");
	ok(!strcmp(mwi_libc_name(MWI_LIBC_MUSL), "musl libc") &&
	   !strcmp(mwi_libc_name(MWI_LIBC_GLIBC), "glibc"), "names");
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], *build;

	(void)argc;
	snprintf(self, sizeof(self), "%s", argv[0]);
	build = dirname(dirname(self));	/* build/tests/test_x -> build */
	test_names();
	test_files(build);
	return tap_done();
}
