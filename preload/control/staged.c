/* SPDX-License-Identifier: MIT */
/* staged.c - see staged.h */
#define _GNU_SOURCE
#include "control/staged.h"
#include "base/rundir.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set once by mw_staged_arm, then only read (at exit). */
static char dir[PATH_MAX];	/* as this process names it */
static pid_t loader;		/* the process it was made for */

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
	int fd;

	if (getpid() != loader)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	mw_dir_unlink_each(fd, ours);
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
