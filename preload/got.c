/* got.c - see got.h */
#define _GNU_SOURCE
#include "got.h"
#include "real.h"
#include "heap.h"
#include "spin.h"
#include "track.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const struct {
	const char *name;
	void *hook;
	unsigned kind;		/* MW_GOT_* */
} hooks[] = {
	{ "malloc", (void *)mw_hook_malloc, MW_GOT_ALLOC },
	{ "calloc", (void *)mw_hook_calloc, MW_GOT_ALLOC },
	{ "realloc", (void *)mw_hook_realloc, MW_GOT_ALLOC },
	{ "reallocarray", (void *)mw_hook_reallocarray, MW_GOT_ALLOC },
	{ "free", (void *)mw_hook_free, MW_GOT_ALLOC },
	{ "posix_memalign", (void *)mw_hook_posix_memalign, MW_GOT_ALLOC },
	{ "aligned_alloc", (void *)mw_hook_aligned_alloc, MW_GOT_ALLOC },
	{ "memalign", (void *)mw_hook_memalign, MW_GOT_ALLOC },
	{ "valloc", (void *)mw_hook_valloc, MW_GOT_ALLOC },
	{ "pvalloc", (void *)mw_hook_pvalloc, MW_GOT_ALLOC },
	{ "dlopen", (void *)mw_hook_dlopen, MW_GOT_ALLOC },
	{ "dlclose", (void *)mw_hook_dlclose, MW_GOT_ALLOC },
	/* Ruby's heap pages: libruby's own calls only */
	{ "mmap", (void *)mw_hook_mmap, MW_GOT_HEAP },
	{ "munmap", (void *)mw_hook_munmap, MW_GOT_HEAP },
};

/* What mw_got_patch_all patches (MW_GOT_*); set by mw_got_set_kinds. */
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
int mw_got_skipped;

int mw_got_patched(void)
{
	return __atomic_load_n(&nslots, __ATOMIC_RELAXED);
}

/* Our own load base, found before any dl_iterate_phdr: dladdr inside
 * its callback would take the loader lock in the wrong order. */
static uintptr_t self_base;

static void find_self(void)
{
	Dl_info self;

	if (!self_base && dladdr((void *)find_self, &self))
		self_base = (uintptr_t)self.dli_fbase;
}

static int skip_object(const char *name, uintptr_t base)
{
	if (base == self_base)
		return 1;
	if (!name)
		return 1;
	return strstr(name, "linux-vdso") || strstr(name, "/ld-linux") ||
	       strstr(name, "ld-linux-x86-64") || strstr(name, "liburcu");
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
	uintptr_t base;
	const void *dyn;
	uintptr_t relro_lo, relro_hi;
	const ElfW(Sym) *symtab;
	const char *strtab;
	int patched;
};

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

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !symi)
			continue;
		name = sc->strtab + sc->symtab[symi].st_name;
		for (h = 0; h < NHOOKS; h++)
			if (strcmp(name, hooks[h].name) == 0)
				break;
		if (h == NHOOKS || !(hooks[h].kind & patch_kinds) ||
		    (hooks[h].kind == MW_GOT_HEAP && !sc->is_ruby))
			continue;
		addr = (void **)(sc->base + rel[i].r_offset);
		if (*addr == hooks[h].hook)
			continue;	/* ours already */
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
	if (skip_object(info->dlpi_name, info->dlpi_addr))
		return 0;
	sc.base = info->dlpi_addr;
	sc.is_ruby = strstr(info->dlpi_name, "libruby") != NULL;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
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
				return 0;	/* not x86-64 RELA: leave */
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
