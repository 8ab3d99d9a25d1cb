/* SPDX-License-Identifier: MIT */
/* dl.c - the dlopen/dlclose hooks: objects loaded after the attach
 * (`require 'zlib'`) get their GOT slots patched too, and the records of
 * unloaded objects are pruned.
 */
#define _GNU_SOURCE
#include "core/hooklist.h"
#include "core/real.h"
#include "core/tls.h"
#include "hook/got.h"

/* The GOT patcher points dlopen/dlclose slots here (hidden: exporting
 * them would interpose dlopen for the whole process in preload mode). */
void *mw_hook_dlopen(const char *file, int mode)
{
	void *h = mw_real.dlopen(file, mode);

	if (h && mw_tracking()) {
		mw_tls.guard++;
		mw_got_patch_all();
		mw_tls.guard--;
	}
	return h;
}

int mw_hook_dlclose(void *handle)
{
	int ret = mw_real.dlclose(handle);

	if (mw_tracking()) {
		mw_tls.guard++;
		mw_got_patch_all();	/* prunes the records of unloaded objects */
		mw_tls.guard--;
	}
	return ret;
}
