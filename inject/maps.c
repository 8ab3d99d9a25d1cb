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

int mwi_maps_read(pid_t pid, struct mwi_maps *m)
{
	char path[64], buf[PATH_MAX + 256];
	FILE *f;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
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
