/* SPDX-License-Identifier: MIT */
/* procmaps.h - a line of /proc/PID/maps, parsed without allocating:
 *
 *	lo-hi perms offset major:minor inode   path
 *
 * The path is the rest of the line after the inode's spaces: it may
 * hold spaces, and ends with " (deleted)" for a file since removed.
 * Shared by the injector (a target's maps) and the library (its own).
 */
#ifndef MW_PROCMAPS_H
#define MW_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

struct mw_maps_entry {
	uintptr_t lo, hi;
	char perms[5];			/* "r-xp", NUL-terminated */
	uint64_t off;
	unsigned int dev_major, dev_minor;
	unsigned long ino;
	const char *path;		/* into the line, not terminated */
	size_t pathlen;			/* 0: an anonymous mapping */
};

/* Parses the @n bytes at @s (one line, without its newline) into @e.
 * Returns 0, or -EINVAL for a line that is not one of maps (@e is then
 * unspecified).  Context: any; pure. */
int mw_maps_parse(const char *s, size_t n, struct mw_maps_entry *e);

/* Calls @fn on each line of the maps file open at @fd, read through
 * @buf (@cap bytes; a longer line is skipped), until it returns
 * non-zero.  Returns that value, 0 at the end, or -errno of a failed
 * read.  Context: no allocation (read(2) only); @fd's offset moves. */
int mw_maps_each(int fd, char *buf, size_t cap,
		 int (*fn)(const struct mw_maps_entry *e, void *arg),
		 void *arg);

#endif
