/* SPDX-License-Identifier: MIT */
/* maps.h - what the injector needs from /proc/PID/maps.
 *
 * Every call reads the file afresh as one consistent view, even of a
 * process that maps and unmaps memory all the time: whole passes until
 * two agree, else the union of their lines (see maps.c).
 * Context: the injector's own process, any time (it allocates). */
#ifndef MWI_MAPS_H
#define MWI_MAPS_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#define MWI_MAX_RANGES 64
#define MWI_MAX_LEAF 48

struct mwi_maps {
	char libc_path[PATH_MAX];	/* as the target sees it */
	uintptr_t libc_base;		/* load address (offset-0 mapping) */
	unsigned long libc_ino;		/* its inode, to check a path */
	/* Executable ranges where hijacking is unsafe: libc, ld.so, our
	 * own library and liburcu (allocator, loader and tracer locks). */
	uintptr_t unsafe_lo[MWI_MAX_RANGES], unsafe_hi[MWI_MAX_RANGES];
	int nunsafe;
	uintptr_t libc_lo, libc_hi;	/* libc's executable mapping */
	/* Entries of libc's lock-free string/memory routines as this CPU's
	 * libc selects them (see maps.c); none when the target's libc is
	 * not the file ours is.  [leaf_lo, leaf_hi): the code each one's
	 * walk reached (aarch64; elsewhere its entry alone). */
	uintptr_t leaf[MWI_MAX_LEAF];
	uintptr_t leaf_lo[MWI_MAX_LEAF], leaf_hi[MWI_MAX_LEAF];
	int nleaf;
};

/* Reads /proc/PID/maps: libc, the unsafe ranges and the leaves, from one
 * view.  Returns 0, -ENOENT if no libc is mapped (a static binary, or a
 * process that exited), or -errno (-ENOMEM).  @m is cleared first. */
int mwi_maps_read(pid_t pid, struct mwi_maps *m);

/* 1 when @path, the libc of a process as maps names it (libc_path), is
 * musl's by its name: its loader is its libc (ld-musl-ARCH.so.1, and
 * Alpine's libc.musl-ARCH.so.1 links to it), or Debian's musl package's
 * /usr/lib/ARCH-linux-musl/libc.so.  Context: any; no allocation. */
int mwi_maps_libc_is_musl(const char *path);

/* 1 when @pc is in one of m's unsafe ranges.  Context: any; no
 * allocation. */
int mwi_maps_unsafe(const struct mwi_maps *m, uintptr_t pc);
/* 1 when @pc is the entry of one of m->leaf.  Context: as above. */
int mwi_maps_leaf(const struct mwi_maps *m, uintptr_t pc);
/* 1 when @entry is the entry of one of m->leaf and @pc lies in the code
 * its walk reached (aarch64: a stale x30 while pc is elsewhere in libc
 * is no leaf's).  Context: as above. */
int mwi_maps_in_leaf(const struct mwi_maps *m, uintptr_t entry, uintptr_t pc);

/* The offset-0 mapping of @file (as the target names it; a chrooted
 * target's files show in maps under our view of its root, which ends
 * with @file): its base, inode and the path as maps shows it.
 * Returns 0, -ENOENT, or -errno when maps cannot be read; the outputs are
 * left unchanged on failure. */
int mwi_maps_find(pid_t pid, const char *file, uintptr_t *base,
		  unsigned long *ino, char *shown, size_t len);

/* A file mapped in @pid (@shown as maps names it, inode @ino) as a path
 * we can open, into @path (@len bytes).  maps names files as seen from
 * our root: for a target in another mount namespace the file is under
 * /proc/PID/root, for a chrooted one it is the path itself.  A target
 * chrooted inside a mount namespace of its own (unshare, then chroot;
 * no pivot_root) has its files named from that namespace's root, above
 * its own: there the file is a tail of that name under /proc/PID/root
 * (/tmp/x of a root at /srv/r, named /srv/r/tmp/x, where a mount over
 * its /tmp hides it from ours).  The inode tells which (overlayfs may
 * change the device, so only the inode is compared).  Returns 0 or
 * -ENOENT.  Context: the injector. */
int mwi_maps_local_file(pid_t pid, const char *shown, unsigned long ino,
			char *path, size_t len);
/* 1 when process @pid has exited: no such pid, or a zombie its parent
 * has not reaped yet (kill(pid, 0) still succeeds then, and its maps
 * read as empty).  Context: any; no allocation. */
int mwi_proc_gone(pid_t pid);

#endif
