/* maps.c - see maps.h */
#define _GNU_SOURCE
#include "maps.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int is_libc(const char *base)
{
	return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0;
}

static int is_unsafe_object(const char *base)
{
	return is_libc(base) || strncmp(base, "ld-linux", 8) == 0 ||
	       strncmp(base, "ld-", 3) == 0 ||
	       strncmp(base, "libmwrap", 8) == 0 ||
	       strncmp(base, "liburcu", 7) == 0;
}

/* /proc/PID/maps, opened for reading line by line; NULL with errno. */
static FILE *open_maps(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	return fopen(path, "re");
}

/* Where libc is mapped in process @pid: its load base, executable range,
 * device and inode.  0 or -ENOENT (or -errno). */
static int find_libc(pid_t pid, uintptr_t *base, uintptr_t *lo_x,
		     uintptr_t *hi_x, char *dev, unsigned long *ino,
		     char *path, size_t len)
{
	char buf[PATH_MAX + 256];
	FILE *f;

	*base = *lo_x = *hi_x = 0;
	f = open_maps(pid);
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		unsigned long lo, hi, off, inode;
		char perms[8], file[PATH_MAX], d[32];
		const char *name;

		file[0] = '\0';
		if (sscanf(buf, "%lx-%lx %7s %lx %31s %lu %4095[^\n]", &lo, &hi,
			   perms, &off, d, &inode, file) < 6 ||
		    file[0] != '/' || strstr(file, " (deleted)"))
			continue;
		name = strrchr(file, '/') + 1;
		if (!is_libc(name))
			continue;
		if (off == 0 && !*base) {
			*base = lo;
			*ino = inode;
			snprintf(dev, 32, "%s", d);
			if (path)
				snprintf(path, len, "%s", file);
		}
		if (perms[2] == 'x' && *base && inode == *ino && !*lo_x) {
			*lo_x = lo;
			*hi_x = hi;
		}
	}
	fclose(f);
	return *base ? 0 : -ENOENT;
}

/* Routines that keep no lock and no state of their own: they read and
 * write only the memory they are given, never call malloc, stdio or the
 * loader, and call nothing else: x86-64 glibc writes them as leaves in
 * assembly that never move rsp (checked on Debian 12's glibc 2.36 for
 * the AVX-512/EVEX variants picked here: no push, call or rsp operand
 * in them or in the code they jump to; the _chk ones may jump to
 * __chk_fail, which aborts anyway).  A thread inside one, called from
 * application code, is at a safe point: our calls can run on it and it
 * resumes mid-copy.  This is what makes a thread that lives in memcpy
 * (copying big strings) attachable without waiting for it to leave
 * libc.  Anything else in libc may hold a lock or half-updated state
 * (the malloc family, stdio, the loader, locale, atexit, ...). */
static const char *const leaf_names[] = {
	"memcpy", "memmove", "mempcpy", "memset", "memcmp", "bcmp",
	"memchr", "memrchr", "rawmemchr", "strlen", "strnlen", "strchr",
	"strchrnul", "strrchr", "strcmp", "strncmp", "strcpy", "stpcpy",
	"strncpy", "stpncpy", "strcat", "strncat", "wmemset", "wmemcmp",
	"wmemchr", "wcslen", "wcsnlen", "wcschr", "wcsrchr", "wcscmp",
	"wcsncmp", "wcscpy", "__memcpy_chk", "__memmove_chk",
	"__mempcpy_chk", "__memset_chk", "__wmemset_chk",
};

/* The targets's entries of leaf_names.  Most are ifuncs: libc picks one
 * implementation per CPU at load time, and the picked one is a local
 * symbol, absent from the dynamic symbol table.  Our own process runs
 * on the same CPU: when the target's libc is the very file ours is,
 * dlsym's answer here, moved by the difference of the load bases, is
 * the target's.  Otherwise (a container's libc, another GLIBC_TUNABLES
 * choice) no entry matches and libc stays unsafe as a whole. */
static void find_leaves(pid_t pid, struct mwi_maps *m)
{
	char dev[32], our_dev[32];
	uintptr_t base, our_base, lo, hi;
	unsigned long ino, our_ino;
	size_t i;

	if (find_libc(pid, &base, &lo, &hi, dev, &ino, NULL, 0) ||
	    find_libc(getpid(), &our_base, &lo, &hi, our_dev, &our_ino,
		      NULL, 0) ||
	    ino != our_ino || strcmp(dev, our_dev))
		return;
	for (i = 0; i < sizeof(leaf_names) / sizeof(leaf_names[0]) &&
		    m->nleaf < MWI_MAX_LEAF; i++) {
		uintptr_t at = (uintptr_t)dlsym(RTLD_DEFAULT, leaf_names[i]);

		/* ours if in our libc's code (not an interposer's) */
		if (at >= lo && at < hi)
			m->leaf[m->nleaf++] = at - our_base + base;
	}
}

int mwi_maps_read(pid_t pid, struct mwi_maps *m)
{
	char buf[PATH_MAX + 256], dev[32];
	FILE *f;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = find_libc(pid, &m->libc_base, &m->libc_lo, &m->libc_hi, dev,
			&m->libc_ino, m->libc_path, sizeof(m->libc_path));
	if (ret)
		return ret;
	f = open_maps(pid);
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		unsigned long lo, hi, off, ino;
		char perms[8], file[PATH_MAX];
		const char *base;

		file[0] = '\0';
		if (sscanf(buf, "%lx-%lx %7s %lx %*s %lu %4095[^\n]", &lo, &hi,
			   perms, &off, &ino, file) < 5 || file[0] != '/')
			continue;
		base = strrchr(file, '/') + 1;
		if (strncmp(base, "libmwrap", 8) == 0)
			m->has_libmwrap = 1;
		if (perms[2] == 'x' && is_unsafe_object(base) &&
		    m->nunsafe < MWI_MAX_RANGES) {
			m->unsafe_lo[m->nunsafe] = lo;
			m->unsafe_hi[m->nunsafe++] = hi;
		}
	}
	fclose(f);
	find_leaves(pid, m);
	return 0;
}

int mwi_maps_leaf(const struct mwi_maps *m, uintptr_t pc)
{
	int i;

	for (i = 0; i < m->nleaf; i++)
		if (pc == m->leaf[i])
			return 1;
	return 0;
}

int mwi_maps_unsafe(const struct mwi_maps *m, uintptr_t pc)
{
	int i;

	for (i = 0; i < m->nunsafe; i++)
		if (pc >= m->unsafe_lo[i] && pc < m->unsafe_hi[i])
			return 1;
	return 0;
}

int mwi_maps_find(pid_t pid, const char *file, uintptr_t *base,
		  unsigned long *ino, char *shown, size_t len)
{
	char buf[PATH_MAX + 256];
	size_t flen = strlen(file);
	FILE *f;
	int ret = -ENOENT;

	f = open_maps(pid);
	if (!f)
		return -errno;
	while (ret && fgets(buf, sizeof(buf), f)) {
		unsigned long lo, hi, off, inode;
		char name[PATH_MAX];
		size_t nlen;

		name[0] = '\0';
		if (sscanf(buf, "%lx-%lx %*s %lx %*s %lu %4095[^\n]", &lo, &hi,
			   &off, &inode, name) < 5 || off != 0)
			continue;
		nlen = strlen(name);
		if (nlen < flen || strcmp(name + nlen - flen, file) ||
		    (nlen > flen && file[0] != '/'))
			continue;
		*base = lo;
		*ino = inode;
		snprintf(shown, len, "%s", name);
		ret = 0;
	}
	fclose(f);
	return ret;
}

int mwi_maps_range(pid_t pid, uintptr_t addr, uintptr_t *lo_out,
		   uintptr_t *hi_out)
{
	char buf[PATH_MAX + 256];
	FILE *f;
	int ret = -ENOENT;

	f = open_maps(pid);
	if (!f)
		return -errno;
	while (ret && fgets(buf, sizeof(buf), f)) {
		unsigned long lo, hi;

		if (sscanf(buf, "%lx-%lx", &lo, &hi) == 2 && addr >= lo &&
		    addr < hi) {
			*lo_out = lo;
			*hi_out = hi;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}
