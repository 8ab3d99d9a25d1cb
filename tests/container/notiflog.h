/* SPDX-License-Identifier: MIT */
/* notiflog.h - the USER_NOTIF syscall logger shared by sctarget.c and
 * sclog.c: answers every notification of the filter @*listener with
 * "continue" and sets bit NR of @main_seen (the thread @main_tid) or of
 * @other_seen (any other thread).  Runs in a thread started before the
 * filter, so that its own syscalls are not filtered; returns when the
 * listener fails. */
#ifndef NOTIFLOG_H
#define NOTIFLOG_H

#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <time.h>

#define NOTIFLOG_MAX_NR 512

static inline void notiflog_serve(const int *listener, pid_t main_tid,
				  unsigned long *main_seen,
				  unsigned long *other_seen)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	struct timespec ts = { 0, 1000000 };
	int fd;

	while ((fd = __atomic_load_n(listener, __ATOMIC_ACQUIRE)) < 0)
		nanosleep(&ts, NULL);
	for (;;) {
		unsigned long *seen;

		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return;
		}
		seen = (pid_t)req.pid == main_tid ? main_seen : other_seen;
		if (req.data.nr >= 0 && req.data.nr < NOTIFLOG_MAX_NR)
			__atomic_fetch_or(&seen[req.data.nr / 64],
					  1UL << (req.data.nr % 64),
					  __ATOMIC_RELAXED);
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

#endif
