/* maps.c - see maps.h */
#define _GNU_SOURCE
#include "maps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

int mwi_maps_read(pid_t pid, struct mwi_maps *m)
{
	char buf[PATH_MAX + 256];
	FILE *f;

	memset(m, 0, sizeof(*m));
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
		if (is_libc(base) && off == 0 && !m->libc_base &&
		    !strstr(file, " (deleted)")) {
			m->libc_base = lo;
			m->libc_ino = ino;
			snprintf(m->libc_path, sizeof(m->libc_path), "%s", file);
		}
		if (perms[2] == 'x' && is_unsafe_object(base) &&
		    m->nunsafe < MWI_MAX_RANGES) {
			m->unsafe_lo[m->nunsafe] = lo;
			m->unsafe_hi[m->nunsafe++] = hi;
		}
	}
	fclose(f);
	return m->libc_base ? 0 : -ENOENT;
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
