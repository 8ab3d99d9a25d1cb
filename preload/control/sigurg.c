/* SPDX-License-Identifier: MIT */
/* sigurg.c - see sigurg.h */
#define _GNU_SOURCE
#include "control/sigurg.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* Atomic: the helper stores it around install/restore, the handler
 * loads it. */
static int urg_efd = -1;
/* Our own marked signals (mw_urg_on_queued): set before the handler is
 * installed, read by the handler. */
static int queued_marker;
static void (*queued_fn)(void);
/* What SIGURG did before us (or what the application installed since);
 * written by the helper only while our handler is not installed. */
static struct sigaction chained;

static void on_urg_sigsafe(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uint64_t one = 1;
	int efd = __atomic_load_n(&urg_efd, __ATOMIC_RELAXED);
	void (*fn)(void) = __atomic_load_n(&queued_fn, __ATOMIC_ACQUIRE);

	/* a signal we queued ourselves (the Ruby object view's request):
	 * neither a dump nor the application's business */
	if (fn && si && si->si_code == SI_QUEUE && si->si_pid == getpid() &&
	    si->si_value.sival_int == queued_marker) {
		fn();
		errno = saved;
		return;
	}
	/* a failed write means the counter is full: a dump is pending */
	if (efd >= 0)
		(void)!write(efd, &one, sizeof(one));
	if (chained.sa_flags & SA_SIGINFO) {
		if (chained.sa_sigaction)
			chained.sa_sigaction(sig, si, uc);
	} else if (chained.sa_handler != SIG_DFL &&
		   chained.sa_handler != SIG_IGN && chained.sa_handler) {
		chained.sa_handler(sig);
	}
	errno = saved;
}

static int ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) &&
	       sa->sa_sigaction == on_urg_sigsafe;
}

static int install(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_urg_sigsafe;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGURG, NULL, &old))
		return -errno;
	if (ours(&old))
		return 0;
	chained = old;
	if (sigaction(SIGURG, &sa, NULL))
		return -errno;
	return 0;
}

void mw_urg_on_queued(int marker, void (*fn)(void))
{
	queued_marker = marker;
	__atomic_store_n(&queued_fn, fn, __ATOMIC_RELEASE);
}

int mw_urg_install(int efd)
{
	__atomic_store_n(&urg_efd, efd, __ATOMIC_RELEASE);
	return install();
}

void mw_urg_check(void)
{
	install();
}

void mw_urg_restore(void)
{
	struct sigaction cur;

	if (sigaction(SIGURG, NULL, &cur) == 0 && ours(&cur))
		sigaction(SIGURG, &chained, NULL);
	__atomic_store_n(&urg_efd, -1, __ATOMIC_RELEASE);
}
