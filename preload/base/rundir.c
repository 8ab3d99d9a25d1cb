/* SPDX-License-Identifier: MIT */
/* rundir.c - see rundir.h */
#define _GNU_SOURCE
#include "base/rundir.h"

#include "base/fmt.h"
#include "base/safefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const bases[] = { "/tmp", "/var/tmp", "/dev/shm" };

/* "BASE/mwrap.PID.XXXXXX" into @buf (64 bytes); 0 or -ENAMETOOLONG. */
static int template(char *buf, const char *base)
{
	char pid[24];
	size_t b = strlen(base), p = mw_fmt_u64(pid, (uint64_t)getpid());

	if (b + 7 + p + 8 > 64)
		return -ENAMETOOLONG;
	memcpy(buf, base, b);
	memcpy(buf + b, "/mwrap.", 7);
	memcpy(buf + b + 7, pid, p);
	memcpy(buf + b + 7 + p, ".XXXXXX", 8);
	return 0;
}

int mw_rundir_make(struct mw_rundir *d)
{
	int ret = -ENOENT;
	size_t i;

	d->fd = -1;
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		int fd;

		if ((ret = template(d->path, bases[i])))
			continue;
		if (!mkdtemp(d->path)) {
			ret = -errno;
			continue;
		}
		/* /tmp is sticky: no one else can swap the name now, but
		 * check what we opened anyway */
		fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			  O_CLOEXEC);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		ret = mw_fd_check_ours(fd, S_IFDIR);
		if (!ret) {
			d->fd = fd;
			return 0;
		}
		close(fd);
	}
	d->path[0] = '\0';
	return ret;
}

int mw_rundir_create(const struct mw_rundir *d, const char *name, int flags)
{
	int fd;

	if (d->fd < 0)
		return -EBADF;
	fd = openat(d->fd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int mw_rundir_join(const struct mw_rundir *d, const char *name, char *buf,
		   unsigned long len)
{
	size_t p = strlen(d->path), n = strlen(name);

	if (p + 1 + n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(buf, d->path, p);
	buf[p] = '/';
	memcpy(buf + p + 1, name, n + 1);
	return 0;
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

void mw_dir_unlink_each(int fd, int (*pick)(const char *name))
{
	char buf[2048] __attribute__((aligned(8)));

	/* each pass unlinks what it read; rewind until a pass removes
	 * nothing */
	for (;;) {
		int removed = 0;
		long n, off;

		lseek(fd, 0, SEEK_SET);
		n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		for (off = 0; n > 0 && off < n;) {
			struct linux_dirent64 *e = (void *)(buf + off);

			off += e->d_reclen;
			if (pick(e->d_name) && unlinkat(fd, e->d_name, 0) == 0)
				removed++;
		}
		if (!removed)
			break;
	}
}

/* Every entry but "." and ".." (a subdirectory stays: unlinkat fails) */
static int any_file(const char *name)
{
	return strcmp(name, ".") && strcmp(name, "..");
}

void mw_rundir_remove(struct mw_rundir *d)
{
	if (d->fd < 0)
		return;
	mw_dir_unlink_each(d->fd, any_file);
	if (d->path[0])
		rmdir(d->path);
	mw_rundir_close(d);
}

void mw_rundir_close(struct mw_rundir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}
