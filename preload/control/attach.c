/* SPDX-License-Identifier: MIT */
/* attach.c - late mode: mw_attach() starts a helper thread that hooks
 * the GOT, serves SIGURG and the control file, and undoes it all at
 * detach.  The control file is served by ctl_server.c; with a lease
 * (attach option lease:N) the helper detaches by itself when no command
 * came for N seconds: the front end that owned the window died.
 *
 * mw_attach() runs in a thread the injector hijacked, so it only starts
 * the helper and returns; everything else happens on the helper, which
 * blocks all signals.
 */
#define _GNU_SOURCE
#include "control/attach.h"
#include "base/export.h"
#include "base/options.h"
#include "control/ctl_server.h"
#include "control/fork.h"
#include "control/sigurg.h"
#include "control/staged.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "core/sample.h"
#include "core/sites.h"
#include "core/track.h"
#include "hook/got.h"
#include "hook/rbheap.h"
#include "inject_abi.h"
#include "mwrap.h"
#include "report/jitsyms.h"
#include "report/rbjob.h"
#include "report/symbolize.h"
#include "common/libc.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Attach state.  `attached` is set by mw_attach and cleared by the
 * helper when it has undone everything; the rest is owned by the helper
 * while it runs. */
static int attached;
/* Set from a detach's first step until attached is 0 again: the front end
 * has its "ok detach" a moment before the helper has finished, and an
 * attach arriving then waits for it rather than read "already attached". */
static int detaching;
/* Atomic: set by mw_detach, read by the helper. */
static int stop_requested;
/* Written by mw_attach while `attached` keeps any other attach out,
 * before the helper starts (pthread_create orders them); then read by
 * the helper, mw_detach (efd) and the atfork/atexit handlers. */
static pthread_t helper;
static int efd = -1;			/* SIGURG + stop wake-ups */
static struct mw_options opts;
static pid_t pid_at_attach;		/* written by the helper at start */
/* The helper's, once: handlers are never unregistered. */
static int atfork_registered;

/* --- detach ------------------------------------------------------------- */

/* Closes the control files (@remove: and deletes the runtime
 * directory, see mw_ctl_close) and the wake-up eventfd. */
static void close_files(int remove)
{
	mw_ctl_close(remove);
	if (efd >= 0)
		close(efd);
	efd = -1;
}

/* Undoes the attach.  The final dump goes to the dump path, and the
 * runtime directory keeps only it; @discard: no dump, no directory.
 * The files go before the answer: a front end that reads it and
 * attaches again must not find this attach's directory. */
static void undo_attach(int discard)
{
	int restored;

	__atomic_store_n(&detaching, 1, __ATOMIC_RELEASE);
	mw_track_disable();
	restored = mw_got_restore_all();
	mw_urg_restore();
	mw_ctl_finish(discard, restored);
	mw_symbolize_drop();	/* the final dump's function tables */
	close_files(0);
}

static void drain(int fd)
{
	char buf[512];

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

/* The target exits while attached: no final dump must be lost. */
static void at_target_exit(void)
{
	if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE) || getpid() != pid_at_attach)
		return;
	mw_tls.guard++;
	mw_track_disable();
	mw_ctl_at_exit();	/* after any dump the helper is writing */
	mw_tls.guard--;
}

static void after_fork_child(void)
{
	if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE))
		return;
	/* The child has no helper: it detaches itself, and never writes to
	 * the parent's files. */
	mw_track_disable();
	mw_got_restore_after_fork();
	mw_urg_restore();
	close_files(0);
	attached = 0;
	detaching = 0;
}

static void *helper_main(void *arg)
{
	int slots_now;
	int ret, done = 0;

	(void)arg;
	mw_tls.guard++;		/* nothing this thread does is traced */
	if (opts.staged)	/* first: whatever fails below, we are loaded */
		mw_staged_arm();
	ret = mw_ctl_open(&opts);
	if (ret < 0)
		goto fail;
	ret = mw_sites_init();
	if (ret) {
		/* before anything is hooked: the target runs on untouched */
		mw_ctl_answer("error: cannot create the site table (a memory limit?): ",
		       mw_strerror(-ret));
		goto fail;
	}
	mw_ruby_init();
	mw_jit_find();	/* before tracking: the JIT's allocations */
	if (!mw_real.dlopen || !mw_real.dlclose) {
		mw_ctl_answer("error: ", "cannot find the real dlopen/dlclose");
		goto fail;
	}
	if (!atfork_registered) {
		mw_fork_init(after_fork_child);
		atexit(at_target_exit);	/* we are never unloaded */
		atfork_registered = 1;
	}
	pid_at_attach = getpid();
	mw_sample_bytes = opts.sample;
	mw_track_stacks = opts.stacks;
	mw_stack_sample_bytes = opts.stacks && !opts.sample ?
				opts.stack_sample : 0;
	mw_track_reset();	/* a new window: also empties the live table */
	mw_urg_on_queued(MW_RBJOB_SIGVAL, mw_rbjob_on_signal_sigsafe);
	ret = mw_urg_install(efd);
	if (ret) {
		mw_ctl_answer("error: cannot install the SIGURG handler: ",
		       mw_strerror(-ret));
		goto fail;
	}
	mw_heap_init();
	mw_got_set_kinds(MW_GOT_ALLOC | MW_GOT_HEAP);
	mw_track_enable();
	slots_now = mw_got_patch_all();
	mw_ctl_answer_attached((uint64_t)slots_now);

	for (;;) {
		int ino_fd = mw_ctl_wake_fd();
		struct pollfd p[2] = { { efd, POLLIN, 0 }, { ino_fd, POLLIN, 0 } };

		poll(p, ino_fd >= 0 ? 2 : 1, 200);
		if (__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE))
			break;
		if (p[0].revents & POLLIN) {
			drain(efd);
			mw_ctl_dump();
		}
		done = mw_ctl_serve();
		if (done)
			break;
		if (mw_ctl_lease_expired()) {
			done = 2;	/* the front end is gone */
			break;
		}
		mw_urg_check();
		mw_sites_grow_table();
	}
	undo_attach(done == 2);
	__atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&detaching, 0, __ATOMIC_RELEASE);
	mw_tls.guard--;
	return NULL;
fail:
	mw_track_disable();
	mw_got_restore_all();
	mw_urg_restore();
	mw_ctl_linger();
	close_files(1);
	__atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
	mw_tls.guard--;
	return NULL;
}

/* --- exported ------------------------------------------------------------ */

EXPORT int mw_attach(const char *options)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret, i;

	if (!mw_real_ready())
		return MW_ATTACH_NOT_READY;
	if (__atomic_load_n(&mw_enabled, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&attached, __ATOMIC_RELAXED))
		return MW_ATTACH_PRELOADED;
	/* a detach finishing: a few ms at most (closing files) */
	for (i = 0; i < 2000 && __atomic_load_n(&detaching, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	if (__atomic_exchange_n(&attached, 1, __ATOMIC_ACQ_REL))
		return MW_ATTACH_ALREADY;
	mw_tls.guard++;
	if (mw_options_parse(options, &opts, NULL, 0)) {
		ret = -EINVAL;
		goto out;
	}
	stop_requested = 0;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		ret = -errno;
		goto out;
	}
	/* the helper must never take the application's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&helper, &attr, helper_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		close(efd);
		efd = -1;
	} else {
		pthread_setname_np(helper, "mwrap-helper");
	}
out:
	if (ret)
		__atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
	mw_tls.guard--;
	return ret;
}

EXPORT int mw_detach(void)
{
	uint64_t one = 1;
	int i;

	if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE))
		return -ENOENT;
	__atomic_store_n(&stop_requested, 1, __ATOMIC_RELEASE);
	if (efd >= 0 && write(efd, &one, sizeof(one)) < 0)
		return -errno;
	for (i = 0; i < 5000 && __atomic_load_n(&attached, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	return __atomic_load_n(&attached, __ATOMIC_ACQUIRE) ? -ETIMEDOUT : 0;
}

int mw_attach_active(void)
{
	return __atomic_load_n(&attached, __ATOMIC_ACQUIRE);
}
