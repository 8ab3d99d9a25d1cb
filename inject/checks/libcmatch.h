/* SPDX-License-Identifier: MIT */
/* libcmatch.h - whether the target's C library can load the library at
 * all.  A library linked against glibc cannot be loaded by musl's
 * dlopen (it needs libc.so.6 and glibc's versioned symbols: "Error
 * loading shared library ld-linux-x86-64.so.2"), nor one linked against
 * musl by glibc's.  Worse, the failure then reads as something else:
 * glibc's dlopen error record is not musl's, so the call seems to find
 * no FUNCTION.  So the two are compared before anything is done.
 */
#ifndef MWI_LIBCMATCH_H
#define MWI_LIBCMATCH_H

#include <sys/types.h>

#include "base/failure.h"
#include "process/maps.h"

enum mwi_libc { MWI_LIBC_UNKNOWN, MWI_LIBC_GLIBC, MWI_LIBC_MUSL };

/* The C library of process @pid, whose maps @m were read: musl by its
 * name (mwi_maps_libc_is_musl), glibc when the mapped file defines
 * gnu_get_libc_version.  Context: the injector; reads the file. */
enum mwi_libc mwi_libc_of_target(pid_t pid, const struct mwi_maps *m);

/* The C library the ELF file @path is linked against, by its DT_NEEDED
 * entries: glibc's libc.so.6, or musl's libc.so (musl-gcc) or
 * libc.musl-ARCH.so.1 (Alpine); MWI_LIBC_UNKNOWN if it names neither
 * or cannot be read.  Context: the injector. */
enum mwi_libc mwi_libc_of_file(const char *path);

/* "glibc", "musl libc" or "an unknown C library". */
const char *mwi_libc_name(enum mwi_libc libc);

/* Checks that process @pid (maps @m) can load @lib, a path valid in its
 * mount namespace (read through /proc/PID/root, else as it is).
 * Returns 0 when the two C libraries are the same or either is unknown;
 * else EX_LIBC, with @why saying which C library each is built for and
 * what to load instead, in one line.  Nothing in the target changes.
 * Context: the injector, before any ptrace. */
int mwi_libc_check(pid_t pid, const struct mwi_maps *m, const char *lib,
		   struct mwi_failure *why);

#endif
