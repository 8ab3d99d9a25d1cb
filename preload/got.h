/* got.h - late hooking by rewriting GOT slots.
 *
 * For every loaded object except ld.so, the vdso, libmwrap itself and
 * liburcu, the R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations of
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
void mw_got_set_kinds(unsigned kinds);

/* Patches every loaded object not patched yet.  Returns the number of
 * slots patched now (>= 0) or -errno.
 * Context: not a hook; takes the GOT lock, then the loader's lock. */
int mw_got_patch_all(void);

/* Restores every slot we patched that still points at us and forgets
 * them all.  Returns the number restored.  Context: as above. */
int mw_got_restore_all(void);

/* Slots currently patched; slots we skipped (mprotect failed). */
int mw_got_patched(void);
extern int mw_got_skipped;

/* After fork, in the child: restore every slot without taking locks (the
 * child is single-threaded; the prepare handler held the GOT lock). */
void mw_got_atfork_prepare(void);
void mw_got_atfork_parent(void);
void mw_got_atfork_child_restore(void);

#endif
