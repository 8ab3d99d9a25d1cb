/* SPDX-License-Identifier: MIT */
/* staged.c - see staged.h */
#define _GNU_SOURCE
#include "control/staged.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Set once by mw_staged_arm, then only read (at exit). */
static char dir[PATH_MAX];	/* as this process names it */
static pid_t loader;		/* the process it was made for */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int ours(const char *name)
{
	return strcmp(name, "libmwrap.so") == 0 ||
	       strncmp(name, "liburcu", 7) == 0;
}

/* At exit: our files out of the directory, then the directory if that
 * emptied it.  The mappings stay valid: other threads still running our
 * code (a hook) are not harmed. */
static void remove_copy(void)
{
	char buf[2048] __attribute__((aligned(8)));
	int fd;

	if (getpid() != loader)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	/* each pass unlinks what it read; rewind until one removes none */
	for (;;) {
		int removed = 0;
		long n, off;

		lseek(fd, 0, SEEK_SET);
		n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		for (off = 0; n > 0 && off < n;) {
			struct linux_dirent64 *e = (void *)(buf + off);

			off += e->d_reclen;
			if (ours(e->d_name) && unlinkat(fd, e->d_name, 0) == 0)
				removed++;
		}
		if (!removed)
			break;
	}
	close(fd);
	rmdir(dir);
}

void mw_staged_arm(void)
{
	Dl_info info;
	const char *slash;
	size_t len;

	if (loader)
		return;
	/* dli_fname: the name we were dlopen()ed by, in this process's
	 * filesystem */
	if (!dladdr((void *)mw_staged_arm, &info) || !info.dli_fname ||
	    !(slash = strrchr(info.dli_fname, '/')) ||
	    slash == info.dli_fname)
		return;
	len = (size_t)(slash - info.dli_fname);
	if (len >= sizeof(dir))
		return;
	memcpy(dir, info.dli_fname, len);
	dir[len] = '\0';
	loader = getpid();
	atexit(remove_copy);	/* we are never unloaded */
}
