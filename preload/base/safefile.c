/* SPDX-License-Identifier: MIT */
/* safefile.c - see safefile.h */
#define _GNU_SOURCE
#include "base/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>	/* rename() only */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fmt.h"

int mw_fd_check_ours(int fd, mode_t type)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if ((st.st_mode & S_IFMT) != type)
		return type == S_IFDIR ? -ENOTDIR : -EINVAL;
	if (st.st_uid != geteuid())
		return -EPERM;
	if (type == S_IFDIR ? (st.st_mode & 0777) != 0700 : st.st_nlink != 1)
		return -EPERM;
	return 0;
}

int mw_safe_open(const char *path, int flags)
{
	/* O_NONBLOCK: a FIFO planted at @path must not hang us; O_TRUNC
	 * waits for the checks */
	int fd = open(path, (flags & ~O_TRUNC) | O_CREAT | O_NOFOLLOW |
		  O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	int ret;

	if (fd < 0)
		return -errno;
	ret = mw_fd_check_ours(fd, S_IFREG);
	if (!ret && (flags & O_TRUNC) && ftruncate(fd, 0))
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Copies @from's content to @to; 0 or -errno. */
static int copy_fd(int from, int to)
{
	char buf[8192];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) != 0) {
		ssize_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (off < n) {
			ssize_t w = write(to, buf + off, (size_t)(n - off));

			if (w < 0 && errno != EINTR)
				return -errno;
			if (w > 0)
				off += w;
		}
	}
	return 0;
}

int mw_safe_replace(const char *path, int append,
		    int (*write_fn)(int fd, void *arg), void *arg)
{
	char tmp[4096 + 32];
	size_t len = strlen(path);
	int fd, old, ret = 0;

	if (len + 24 > sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	mw_fmt_u64(tmp + len + 4, (uint64_t)getpid());
	unlink(tmp);	/* a leftover of ours, never followed */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
		  O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (append) {
		old = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			   O_NOCTTY | O_CLOEXEC);
		if (old >= 0) {
			ret = mw_fd_check_ours(old, S_IFREG);
			if (!ret)
				ret = copy_fd(old, fd);
			close(old);
		} else if (errno != ENOENT) {
			ret = -errno;
		}
	}
	if (!ret)
		ret = write_fn(fd, arg);
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}
