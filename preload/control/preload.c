/* SPDX-License-Identifier: MIT */
/* preload.c - preload mode: start-up when LD_PRELOAD'ed (or, dlopen'ed
 * late, the real functions the attach will forward to) and the dump at
 * exit.
 */
#define _GNU_SOURCE
#include "base/options.h"
#include "control/fork.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "core/sample.h"
#include "core/sites.h"
#include "core/track.h"
#include "hook/got.h"
#include "hook/rbheap.h"
#include "report/allocator.h"
#include "report/dump.h"
#include "report/jitsyms.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Options from MWRAP=, read once by the constructor, then only read (by
 * the exit dump). */
static struct mw_options preload_opts;

static void say(const char *a, const char *b)
{
	const char *parts[] = { "mwrap: ", a, b, "\n" };
	size_t i;

	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (write(2, parts[i], strlen(parts[i])) < 0)
			return;
}

static void exit_dump(void)
{
	const struct mw_options *o = &preload_opts;
	int fd = -1, own = 0;

	mw_tls.guard++;
	if (o->dump_path[0]) {
		fd = open(o->dump_path,
			  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			say("cannot open dump_path ", o->dump_path);
		own = 1;
	} else if (o->dump_fd > 0) {
		fd = o->dump_fd;
		/* The program's own stdio output to that descriptor is still
		 * in its buffers (exit flushes them after every atexit
		 * handler, and ours, registered first, runs last): flush
		 * them now, so that the dump comes after it rather than in
		 * its middle.  This is the exit path, not a hook: stdio's
		 * locks are the program's own, taken as exit would. */
		fflush(NULL);
	}
	if (fd >= 0 && !(o->dump_heap & 4))
		mw_dump_at_exit(fd, o->dump_min, o->format);
	if (fd >= 0 && (o->dump_heap & 3))
		mw_dump_heap_pages(fd, o->dump_heap);
	if (own && fd >= 0)
		close(fd);
	/* Later exit handlers and destructors (liburcu's among them) may
	 * still allocate: from here on, pass everything through. */
	mw_track_disable();
	mw_tls.guard--;
}

/* True when our malloc is the one the program calls: we were preloaded
 * (dlopen'ed late, the global scope still finds libc's first). */
static int interposing(void)
{
	return dlsym(RTLD_DEFAULT, "malloc") == (void *)mw_hook_malloc;
}

/* Named in LD_PRELOAD: preloaded, yet another object's malloc comes
 * first (a program that put its allocator before us for its child). */
static int preloaded(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "libmwrap.so");
}

__attribute__((constructor)) static void mw_preload_init(void)
{
	char err[160];
	int resolved;

	mw_tls.guard++;
	resolved = mw_real_resolve() == 0;
	if (!interposing()) {
		/* dlopen'ed: mw_attach() starts us, forwarding to what the
		 * process calls (found even where RTLD_NEXT found nothing) */
		if (mw_real_use_global())
			say("cannot find the process's malloc functions", "");
		else
			mw_allocator_detect();
		if (getenv("MWRAP") && preloaded())
			say("another malloc comes first in LD_PRELOAD, so this "
			    "process is not traced and writes no dump: ",
			    "put libmwrap.so first (scripts/mwrap does)");
		goto out;
	}
	if (!resolved) {
		/* the hooks pass every call through to what was found */
		say("not tracing: cannot find the real ",
		    mw_real_missing ? mw_real_missing : "malloc functions");
		goto out;
	}
	mw_allocator_detect();
	if (mw_options_parse(getenv("MWRAP"), &preload_opts, err,
			     sizeof(err))) {
		say("MWRAP: ", err);
		say("running untraced", "");
		goto out;
	}
	if (mw_sites_init()) {
		say("cannot create the site table; not tracing", "");
		goto out;
	}
	mw_ruby_init();
	mw_jit_find();	/* before tracking: the JIT's allocations */
	mw_fork_init(NULL);
	if (mw_options_want_dump(&preload_opts))
		atexit(exit_dump);
	mw_sample_bytes = preload_opts.sample;
	mw_track_stacks = preload_opts.stacks;
	mw_stack_sample_bytes = preload_opts.stacks && !preload_opts.sample ?
				preload_opts.stack_sample : 0;
	mw_track_enable();
	/* interposition covers malloc; heap pages need libruby's GOT */
	if (mw_heap_init()) {
		mw_got_set_kinds(MW_GOT_HEAP);
		mw_got_patch_all();
	}
out:
	mw_tls.guard--;
}
