/* SPDX-License-Identifier: MIT */
/* libc.c - see libc.h: the calls that need more of the C library's
 * headers than libc.h should bring into every file (glibc's <malloc.h>
 * declares malloc and the rest with attributes hook/malloc.c's aliases
 * of them do not have). */
#define _GNU_SOURCE
#include "common/libc.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

int mw_mallinfo(struct mw_mallinfo *mi)
{
#ifdef __GLIBC__
	struct mallinfo2 m = mallinfo2();

	mi->arena_bytes = m.arena + m.hblkhd;
	mi->in_use_bytes = m.uordblks + m.hblkhd;
	mi->free_bytes = m.fordblks;
	return 0;
#else
	(void)mi;
	return -ENOSYS;
#endif
}

int mw_dl_tls(void *handle, size_t *modid, void **block)
{
#ifdef __GLIBC__
	if (dlinfo(handle, RTLD_DI_TLS_MODID, modid) || !*modid ||
	    dlinfo(handle, RTLD_DI_TLS_DATA, block) || !*block)
		return -ENOENT;
	return 0;
#else
	(void)handle, (void)modid, (void)block;
	return -ENOSYS;
#endif
}
