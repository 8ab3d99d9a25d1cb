/* SPDX-License-Identifier: MIT */
/* got.c - see got.h */
#define _GNU_SOURCE
#include "hook/got.h"
#include "core/hooklist.h"
#include "core/real.h"
#include "base/cpu.h"
#include "base/spin.h"
#include "core/track.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Entry points left alone, on purpose:
 * - malloc_usable_size: it reads a block and changes nothing; the block
 *   stays with the allocator that made it, and what Ruby accounts with it
 *   is Ruby's own business (we count requested sizes, never usable ones).
 * - jemalloc's mallocx/rallocx/sdallocx/dallocx, tcmalloc's tc_*, and
 *   glibc 2.39's free_sized/free_aligned_sized: Ruby calls none of them,
 *   and a block they make stays invisible to us; free() of it is an
 *   unknown pointer passed straight on.  A tracked block released
 *   through one of them leaves a stale live entry until its address is
 *   reused: a miscount, never a wrong free.
 *
 * @real: where the hook forwards (NULL: not an allocator entry point).
 * A slot is patched only when what it holds is that function, so every
 * call still reaches the allocator it reached before (see slot_ours). */
static const struct {
	const char *name;
	void *hook;
	unsigned kind;		/* MW_GOT_* */
	void *const *real;
} hooks[] = {
#define ENTRY(fn, ret, params, kind) ENTRY_##kind(fn)
#define ENTRY_MW_HOOK_ALLOC(fn) { #fn, (void *)mw_hook_##fn, MW_GOT_ALLOC, \
				  (void *const *)&mw_real.fn },
#define ENTRY_MW_HOOK_DL(fn) { #fn, (void *)mw_hook_##fn, MW_GOT_ALLOC, NULL },
	/* Ruby's heap pages: libruby's own calls only */
#define ENTRY_MW_HOOK_HEAP(fn) { #fn, (void *)mw_hook_##fn, MW_GOT_HEAP, NULL },
	MW_HOOKS(ENTRY)
#undef ENTRY
};

/* What mw_got_patch_all patches (MW_GOT_*); set by mw_got_set_kinds on
 * the thread that then patches, read under got_lock. */
static unsigned patch_kinds = MW_GOT_ALLOC | MW_GOT_HEAP;

void mw_got_set_kinds(unsigned kinds)
{
	patch_kinds = kinds;
}
#define NHOOKS (sizeof(hooks) / sizeof(hooks[0]))

/* One patched slot.  The table is protected by got_lock. */
struct slot {
	void **addr;
	void *orig;
	void *hook;
	uintptr_t obj_base;	/* identifies the object: base and */
	const void *obj_dyn;	/* address of its dynamic section */
	int relro;
};
#define MAX_SLOTS 8192
static struct slot slots[MAX_SLOTS];
static int nslots;
static int got_lock;
/* Written under got_lock; read by the helper's stats without it (a
 * stale count is harmless). */
int mw_got_skipped;
int mw_got_foreign;
char mw_got_foreign_object[256];	/* the first such object; got_lock */

int mw_got_patched(void)
{
	return __atomic_load_n(&nslots, __ATOMIC_RELAXED);
}

/* Our own load base, found before any dl_iterate_phdr: dladdr inside
 * its callback would take the loader lock in the wrong order.  Written
 * once under got_lock, read under it. */
static uintptr_t self_base;

static void find_self(void)
{
	Dl_info self;

	if (!self_base && dladdr((void *)find_self, &self))
		self_base = (uintptr_t)self.dli_fbase;
}

static int skip_object(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name;

	if (info->dlpi_addr == self_base || !name || mw_dl_is_vdso(info))
		return 1;
	return strstr(name, "/ld-linux") || strstr(name, "ld-linux-x86-64") ||
	       strstr(name, "liburcu");
}

static void *dyn_ptr(ElfW(Addr) v, uintptr_t base)
{
	/* glibc relocates these in place; the vdso's are left relative */
	return (void *)(v < base ? v + base : v);
}

/* Writes @val to @addr, lifting RELRO protection for the write.
 * Returns 0 or -1 when the page cannot be made writable. */
static int write_slot(void **addr, void *val, int relro)
{
	long pagesz = sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)addr & ~(uintptr_t)(pagesz - 1));

	if (relro && mprotect(page, (size_t)pagesz, PROT_READ | PROT_WRITE))
		return -1;
	__atomic_store_n(addr, val, __ATOMIC_RELEASE);
	if (relro)
		mprotect(page, (size_t)pagesz, PROT_READ);
	return 0;
}

static struct slot *find_slot_locked(void **addr)
{
	int i;

	for (i = 0; i < nslots; i++)
		if (slots[i].addr == addr)
			return &slots[i];
	return NULL;
}

struct scan {
	int is_ruby;		/* libruby: also mmap/munmap */
	const char *name;
	uintptr_t lo, hi;	/* the object's loaded extent */
	uintptr_t base;
	const void *dyn;
	uintptr_t relro_lo, relro_hi;
	const ElfW(Sym) *symtab;
	const char *strtab;
	int patched;
};

/* Whether a slot of @sc for hook @h may be pointed at the hook: it holds
 * the function the hook forwards to (the global scope's definition), or
 * an unresolved lazy PLT stub of its own object, which would resolve to
 * that same definition.  Anything else, the object's own definition or
 * another object's (a library bound -Bsymbolic or loaded RTLD_DEEPBIND
 * with an allocator of its own), stays as it is: forwarding those calls
 * to the hooks would free that allocator's blocks with another heap. */
static int slot_ours(const struct scan *sc, size_t h, const ElfW(Sym) *sym,
		     void *orig)
{
	uintptr_t o = (uintptr_t)orig;

	if (!hooks[h].real || orig == *hooks[h].real)
		return 1;
	if (sym->st_shndx != SHN_UNDEF && o == sc->base + sym->st_value)
		return 0;
	return o >= sc->lo && o < sc->hi;
}

static void note_foreign_locked(const struct scan *sc)
{
	size_t n = strlen(sc->name);

	mw_got_foreign++;
	if (mw_got_foreign_object[0])
		return;
	if (n >= sizeof(mw_got_foreign_object))
		n = sizeof(mw_got_foreign_object) - 1;
	memcpy(mw_got_foreign_object, sc->name, n);
	mw_got_foreign_object[n] = 0;
}

static void patch_rela_locked(struct scan *sc, const ElfW(Rela) *rel,
			      size_t size)
{
	size_t i, n = size / sizeof(*rel);

	for (i = 0; i < n; i++) {
		unsigned type = ELF64_R_TYPE(rel[i].r_info);
		unsigned symi = ELF64_R_SYM(rel[i].r_info);
		const char *name;
		void **addr;
		struct slot *s;
		size_t h;

		if ((type != MW_R_JUMP_SLOT && type != MW_R_GLOB_DAT) ||
		    !symi)
			continue;
		name = sc->strtab + sc->symtab[symi].st_name;
		for (h = 0; h < NHOOKS; h++)
			if (strcmp(name, hooks[h].name) == 0)
				break;
		if (h == NHOOKS || !(hooks[h].kind & patch_kinds) ||
		    (hooks[h].kind == MW_GOT_HEAP && !sc->is_ruby))
			continue;
		if (hooks[h].real && !*hooks[h].real)
			continue;	/* the C library lacks it: not hooked */
		addr = (void **)(sc->base + rel[i].r_offset);
		if (*addr == hooks[h].hook)
			continue;	/* ours already */
		if (!slot_ours(sc, h, &sc->symtab[symi], *addr)) {
			if (!find_slot_locked(addr))	/* not re-hooked ours */
				note_foreign_locked(sc);
			continue;
		}
		s = find_slot_locked(addr);
		if (!s) {
			if (nslots == MAX_SLOTS) {
				mw_got_skipped++;
				continue;
			}
			s = &slots[nslots];
		}
		s->addr = addr;
		s->orig = *addr;
		s->hook = hooks[h].hook;
		s->obj_base = sc->base;
		s->obj_dyn = sc->dyn;
		s->relro = (uintptr_t)addr >= sc->relro_lo &&
			   (uintptr_t)addr < sc->relro_hi;
		if (write_slot(addr, s->hook, s->relro)) {
			mw_got_skipped++;
			continue;
		}
		if (s == &slots[nslots])
			__atomic_store_n(&nslots, nslots + 1, __ATOMIC_RELAXED);
		sc->patched++;
	}
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan sc = { 0 };
	const ElfW(Dyn) *dyn = NULL, *d;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmprelsz = 0, relasz = 0;
	int *total = arg;
	int i;

	(void)size;
	if (skip_object(info))
		return 0;
	sc.base = info->dlpi_addr;
	sc.name = mw_dl_is_main(info) ? "the executable" : info->dlpi_name;
	sc.is_ruby = strstr(info->dlpi_name, "libruby") != NULL;
	sc.lo = UINTPTR_MAX;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD) {
			uintptr_t lo = sc.base + ph->p_vaddr;

			if (lo < sc.lo)
				sc.lo = lo;
			if (lo + ph->p_memsz > sc.hi)
				sc.hi = lo + ph->p_memsz;
		} else if (ph->p_type == PT_DYNAMIC)
			dyn = (const void *)(sc.base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			sc.relro_lo = sc.base + ph->p_vaddr;
			sc.relro_hi = sc.relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	sc.dyn = dyn;
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			sc.symtab = dyn_ptr(d->d_un.d_ptr, sc.base);
			break;
		case DT_STRTAB:
			sc.strtab = dyn_ptr(d->d_un.d_ptr, sc.base);
			break;
		case DT_JMPREL:
			jmprel = dyn_ptr(d->d_un.d_ptr, sc.base);
			break;
		case DT_PLTRELSZ:
			jmprelsz = d->d_un.d_val;
			break;
		case DT_RELA:
			rela = dyn_ptr(d->d_un.d_ptr, sc.base);
			break;
		case DT_RELASZ:
			relasz = d->d_un.d_val;
			break;
		case DT_PLTREL:
			if (d->d_un.d_val != DT_RELA)
				return 0;	/* not RELA (x86-64's, aarch64's): leave */
			break;
		}
	}
	if (!sc.symtab || !sc.strtab)
		return 0;
	if (jmprel)
		patch_rela_locked(&sc, jmprel, jmprelsz);
	if (rela)
		patch_rela_locked(&sc, rela, relasz);
	*total += sc.patched;
	return 0;
}

/* Drops records of objects no longer loaded (dlclose'd). */
struct present {
	uintptr_t base[1024];
	const void *dyn[1024];
	int n;
	int overflow;
};

static int note_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct present *p = arg;
	int i;

	(void)size;
	if (p->n == 1024) {
		p->overflow = 1;
		return 0;
	}
	p->base[p->n] = info->dlpi_addr;
	p->dyn[p->n] = NULL;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			p->dyn[p->n] = (const void *)(info->dlpi_addr +
					info->dlpi_phdr[i].p_vaddr);
	p->n++;
	return 0;
}

static void prune_locked(void)
{
	static struct present p;	/* under got_lock; too big for a stack */
	int i, j, k = 0;

	p.n = 0;
	p.overflow = 0;
	dl_iterate_phdr(note_object, &p);
	if (p.overflow)
		return;
	for (i = 0; i < nslots; i++) {
		for (j = 0; j < p.n; j++)
			if (p.base[j] == slots[i].obj_base &&
			    p.dyn[j] == slots[i].obj_dyn)
				break;
		if (j < p.n)
			slots[k++] = slots[i];
	}
	__atomic_store_n(&nslots, k, __ATOMIC_RELAXED);
}

int mw_got_patch_all(void)
{
	int total = 0;

	find_self();
	mw_spin_lock(&got_lock);
	prune_locked();
	/* every walk meets every foreign slot again: count them anew */
	mw_got_foreign = 0;
	mw_got_foreign_object[0] = 0;
	dl_iterate_phdr(patch_object, &total);
	mw_spin_unlock(&got_lock);
	return total;
}

/* Puts one slot back unless someone else re-hooked it since. */
static int restore_slot(const struct slot *s)
{
	if (__atomic_load_n(s->addr, __ATOMIC_ACQUIRE) != s->hook)
		return 0;
	return write_slot(s->addr, s->orig, s->relro) == 0;
}

/* dl_iterate_phdr callback: restores the slots of one loaded object.
 * Writing only from inside the iteration matters: the loader's lock it
 * holds keeps a concurrent dlclose from unmapping the object under us. */
static int restore_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const void *dyn = NULL;
	int i, *n = arg;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(info->dlpi_addr +
					     info->dlpi_phdr[i].p_vaddr);
	for (i = 0; i < nslots; i++)
		if (slots[i].obj_base == info->dlpi_addr &&
		    slots[i].obj_dyn == dyn)
			*n += restore_slot(&slots[i]);
	return 0;
}

int mw_got_restore_all(void)
{
	int n = 0;

	mw_spin_lock(&got_lock);
	dl_iterate_phdr(restore_object, &n);
	__atomic_store_n(&nslots, 0, __ATOMIC_RELAXED);	/* the rest are gone */
	mw_spin_unlock(&got_lock);
	return n;
}

void mw_got_fork_lock(void)
{
	mw_spin_lock(&got_lock);
}

void mw_got_fork_unlock(void)
{
	mw_spin_unlock(&got_lock);
}

void mw_got_restore_after_fork(void)
{
	int i;

	/* single-threaded now: every recorded object is still mapped */
	for (i = 0; i < nslots; i++)
		restore_slot(&slots[i]);
	__atomic_store_n(&nslots, 0, __ATOMIC_RELAXED);
}
