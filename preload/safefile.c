/* safefile.c - see safefile.h */
#define _GNU_SOURCE
#include "safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int mw_safe_open(const char *path, int flags)
{
	struct stat st;
	int fd = open(path, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (st.st_uid != geteuid() || st.st_nlink != 1) {
		close(fd);
		return -EPERM;
	}
	return fd;
}
