/* SPDX-License-Identifier: MIT */
/* got.h - late hooking by rewriting GOT slots.
 *
 * For every loaded object except ld.so, the vdso, libmwrap itself and
 * liburcu, the JUMP_SLOT and GLOB_DAT relocations (base/cpu.h) of
 * the malloc family (plus dlopen/dlclose, to patch objects loaded later)
 * are pointed at our hooks.  Each slot's previous value is kept, and a
 * restore only touches slots that still point at us.
 */
#ifndef MW_GOT_H
#define MW_GOT_H

/* What to hook: the malloc family and dlopen/dlclose (attach), and
 * libruby's mmap/munmap for heap pages (both modes). */
#define MW_GOT_ALLOC 1u
#define MW_GOT_HEAP 2u
/* Context: before mw_got_patch_all, on the thread that patches. */
void mw_got_set_kinds(unsigned kinds);

/* Patches every loaded object not patched yet.  Returns the number of
 * slots patched now (>= 0) or -errno.
 * Context: not a hook; takes the GOT lock, then the loader's lock. */
int mw_got_patch_all(void);

/* Restores every slot we patched that still points at us and forgets
 * them all.  Returns the number restored.  Context: as above. */
int mw_got_restore_all(void);

/* Slots currently patched; slots we skipped (mprotect failed).
 * Context: not a hook; takes the GOT lock. */
int mw_got_patched(void);
extern int mw_got_skipped;

/* Slots the last mw_got_patch_all left alone because they reach an
 * allocator other than the one the hooks forward to, and the first
 * object holding one (its path).  Protected by the GOT lock. */
extern int mw_got_foreign;
extern char mw_got_foreign_object[256];

/* The patcher's lock, held across fork (see fork.h).
 * Context: atfork handlers. */
void mw_got_fork_lock(void);
void mw_got_fork_unlock(void);

/* In a forked child: restores every slot without walking the loader's
 * list (no dlclose can have happened since the fork's prepare step).
 * Context: the child's atfork handler, after mw_got_fork_unlock. */
void mw_got_restore_after_fork(void);

#endif
