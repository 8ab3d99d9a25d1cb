/* SPDX-License-Identifier: MIT */
/* dlerror.c - see dlerror.h */
#define _GNU_SOURCE
#include "process/dlerror.h"
#include "base/elfsym.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* glibc's struct dl_action_result (dlfcn/dlerror.h, unchanged from 2.34,
 * which moved dlerror into libc, to 2.41): the thread's last dlopen or
 * dlsym failure.  __libc_dlerror_result, an initial-exec TLS variable,
 * points to it; (void *)-1 stands for a failure to malloc it. */
struct dl_action_result {
	int32_t errcode;	/* errno of the failure, or 0 */
	char errstring_source;	/* 0 constant, 1 ld.so's malloc, 2 libc's */
	char returned;		/* bool: dlerror() has returned it */
	uint64_t objname;	/* const char * */
	uint64_t errstring;	/* char *; NULL: no error */
};
_Static_assert(sizeof(struct dl_action_result) == 24,
	       "struct dl_action_result: 24 bytes on 64-bit");

#define MALLOC_FAILED ((uint64_t)-1)

int mwi_dlerror_slot(const char *libc_path, uintptr_t libc_base,
		     uintptr_t *slot)
{
	uint64_t v;
	/* the loader writes the variable's offset from the thread pointer
	 * into this GOT slot (x86-64: R_X86_64_TPOFF64, aarch64:
	 * R_AARCH64_TLS_TPREL64) */
	int ret = mwi_elf_reloc_slot(libc_path, "__libc_dlerror_result",
				     mwi_arch_tpoff_reloc, &v);

	if (ret)
		return ret;
	*slot = libc_base + v;
	return 0;
}

int mwi_dlerror_read(struct mwi_thread *t, uintptr_t slot, char *msg,
		     size_t len)
{
	struct dl_action_result r;
	char obj[PATH_MAX], err[512];
	int64_t tpoff;
	uint64_t at, tp;
	int ret;

	msg[0] = '\0';
	if ((ret = mwi_peek(t, slot, &tpoff, sizeof(tpoff))) ||
	    (ret = mwi_arch_thread_pointer(t, &tp)) ||
	    (ret = mwi_peek(t, tp + (uint64_t)tpoff, &at,
			    sizeof(at))))
		return ret;
	if (at == MALLOC_FAILED) {
		snprintf(msg, len, "out of memory");
		return 0;
	}
	if (!at)
		return -ENOENT;
	if ((ret = mwi_peek(t, at, &r, sizeof(r))))
		return ret;
	if (r.errcode < 0 || r.errcode > 4095 ||
	    (unsigned char)r.errstring_source > 2 ||
	    (unsigned char)r.returned > 1)
		return -EPROTO;
	if (!r.errstring)
		return -ENOENT;
	if (!r.objname || mwi_read_string(t, r.objname, obj, sizeof(obj)) ||
	    mwi_read_string(t, r.errstring, err, sizeof(err)))
		return -EPROTO;
	/* dlerror's own format */
	if (r.errcode)
		snprintf(msg, len, "%s%s%s: %s", obj, obj[0] ? ": " : "", err,
			 strerror(r.errcode));
	else
		snprintf(msg, len, "%s%s%s", obj, obj[0] ? ": " : "", err);
	return 0;
}
