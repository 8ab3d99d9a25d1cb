/* SPDX-License-Identifier: MIT */
/* libsclog.so - the syscall logger of sctarget's log mode for a Ruby
 * target (tests/container/sclog.rb, through Fiddle): sclog_start()
 * puts the calling thread, and the threads it creates from then on,
 * under a SECCOMP_RET_USER_NOTIF filter whose logger thread records
 * each syscall and lets it run.  Ruby's own threads started before stay
 * unfiltered; the helper thread an attach starts from the calling
 * thread is filtered.
 *
 * sclog_report(buf, len, main) writes "NR NR ..." of the syscalls made
 * since the last report by the calling thread (main != 0) or by the
 * others, and forgets them.
 */
#define _GNU_SOURCE
#include "notiflog.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NR NOTIFLOG_MAX_NR

static unsigned long seen[2][MAX_NR / 64];	/* [0] main, [1] others */
static int listener = -1;
static pid_t main_tid;

static void *logger(void *arg)
{
	(void)arg;
	notiflog_serve(&listener, main_tid, seen[0], seen[1]);
	return NULL;
}

int sclog_start(void);
int sclog_start(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { 1, f };
	pthread_t t;
	int fd;

	main_tid = (pid_t)syscall(SYS_gettid);
	if (pthread_create(&t, NULL, logger, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		return -1;
	__atomic_store_n(&listener, fd, __ATOMIC_RELEASE);
	return 0;
}

int sclog_report(char *buf, int len, int main);
int sclog_report(char *buf, int len, int main)
{
	unsigned long *s = seen[main ? 0 : 1];
	int i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < MAX_NR && n < len - 8; i++)
		if (__atomic_fetch_and(&s[i / 64], ~(1UL << (i % 64)),
				       __ATOMIC_RELAXED) & (1UL << (i % 64)))
			n += snprintf(buf + n, (size_t)(len - n), " %d", i);
	return n;
}
