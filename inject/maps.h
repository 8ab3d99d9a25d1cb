/* maps.h - what the injector needs from /proc/PID/maps. */
#ifndef MWI_MAPS_H
#define MWI_MAPS_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#define MWI_MAX_RANGES 64

struct mwi_maps {
	char libc_path[PATH_MAX];	/* as the target sees it */
	uintptr_t libc_base;		/* load address (offset-0 mapping) */
	unsigned long libc_ino;		/* its inode, to check a path */
	/* Executable ranges where hijacking is unsafe: libc, ld.so, our
	 * own library and liburcu (allocator, loader and tracer locks). */
	uintptr_t unsafe_lo[MWI_MAX_RANGES], unsafe_hi[MWI_MAX_RANGES];
	int nunsafe;
	int has_libmwrap;		/* already loaded */
};

/* Reads /proc/PID/maps.  Returns 0, -ENOENT if no libc is mapped (a
 * static binary), or -errno. */
int mwi_maps_read(pid_t pid, struct mwi_maps *m);

int mwi_maps_unsafe(const struct mwi_maps *m, uintptr_t pc);

#endif
