/* SPDX-License-Identifier: MIT */
/* gotmain.c - the GOT matrix target (tests/test_got_matrix.py): an
 * executable and a library it links (gotlib.c), both built in one of
 * plthook's combinations of PIE, RELRO, binding and -fno-plt, each
 * allocating from known call sites (sites.h).  Prints "ready", then reads
 * commands on stdin, one a line, each answered by one line:
 *
 *   round K all	K rounds of every site, in the executable and the
 *			library; blocks kept: "round K blocks=N"
 *   round K mf		the same with malloc only (free comes later), so
 *			that under lazy binding the other slots stay
 *			unresolved
 *   free		frees every kept block, each by the object that
 *			made it, checking its contents: "freed N"
 *   slots		every GOT slot of the malloc family in the
 *			executable and the library: "slots" then words
 *			OBJ:NAME:TYPE=CLASS:VALUE:PERMS (TYPE jump or glob;
 *			CLASS libc, mwrap, lazy (an unresolved PLT stub of
 *			its own object) or other)
 *
 * On EOF it frees what is left and prints "bye OK" (exit 0) or
 * "bye CORRUPT" (exit 1).  Sizes per round: see the table below.
 *
 * Built with -DGOTM_TAKE_ADDRESS, the executable also stores malloc's
 * address in a callback pointer, as programs handing an allocator to a
 * library do: in a non-PIE executable its PLT entry then becomes malloc's
 * canonical address, the one every dlsym("malloc") answers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SITE_PREFIX exe_
#include "sites.h"

/* provided by gotlib.c */
void *lib_malloc(size_t n);
void *lib_calloc(size_t n, size_t m);
void *lib_realloc(void *old, size_t n);
void *lib_posix_memalign(size_t align, size_t n);
void *lib_aligned_alloc(size_t align, size_t n);
void lib_free(void *p);

#ifdef GOTM_TAKE_ADDRESS
/* set in code, not by an initializer: non-PIE code then needs malloc's
 * address as a link-time constant (its PLT entry), where an initializer
 * would get a dynamic relocation to libc's */
void *(*volatile gotm_malloc_cb)(size_t);
#endif

struct block {
	unsigned char *p;
	size_t size;
	int lib;
	unsigned char fill;
};

static struct block *blocks;
static size_t nblocks, cap;
static int corrupt;

static void keep(void *p, size_t size, int lib)
{
	unsigned char fill = (unsigned char)(0x11 + nblocks % 200);

	if (!p) {
		corrupt = 1;
		return;
	}
	if (nblocks == cap) {
		size_t n = cap ? cap * 2 : 256;
		/* a plain realloc of the bookkeeping: not one of the sites */
		struct block *b = realloc(blocks, n * sizeof(*b));

		if (!b) {
			corrupt = 1;
			return;
		}
		blocks = b;
		cap = n;
	}
	memset(p, fill, size);
	blocks[nblocks++] = (struct block){ p, size, lib, fill };
}

/* One round: the sizes the test expects (exe / lib):
 *   malloc 1000 / 1100, calloc 10x300 / 11x300,
 *   realloc NULL->500->5000 / NULL->600->6000 (two calls at one site),
 *   posix_memalign 64,7000 / 64,7700, aligned_alloc 256,2560 / 256,2816 */
static void round_all(void)
{
	unsigned char *r;

	keep(exe_malloc(1000), 1000, 0);
	keep(exe_calloc(10, 300), 3000, 0);
	r = exe_realloc(NULL, 500);
	if (r)
		memset(r, 7, 500);
	r = exe_realloc(r, 5000);
	if (r && r[499] != 7)
		corrupt = 1;
	keep(r, 5000, 0);
	keep(exe_posix_memalign(64, 7000), 7000, 0);
	keep(exe_aligned_alloc(256, 2560), 2560, 0);

	keep(lib_malloc(1100), 1100, 1);
	keep(lib_calloc(11, 300), 3300, 1);
	r = lib_realloc(NULL, 600);
	if (r)
		memset(r, 7, 600);
	r = lib_realloc(r, 6000);
	if (r && r[599] != 7)
		corrupt = 1;
	keep(r, 6000, 1);
	keep(lib_posix_memalign(64, 7700), 7700, 1);
	keep(lib_aligned_alloc(256, 2816), 2816, 1);
}

static void round_mf(void)
{
	keep(exe_malloc(1000), 1000, 0);
	keep(lib_malloc(1100), 1100, 1);
}

static size_t free_all(void)
{
	size_t i, j, n = nblocks;

	for (i = 0; i < nblocks; i++) {
		struct block *b = &blocks[i];

		for (j = 0; j < b->size; j++)
			if (b->p[j] != b->fill) {
				corrupt = 1;
				break;
			}
		if (b->lib)
			lib_free(b->p);
		else
			exe_free(b->p);
	}
	nblocks = 0;
	return n;
}

/* The slot report. */
static const char *const family[] = {
	"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc",
	"free",
};

struct slot {
	const char *obj;
	const char *name;
	int jump;
	void **addr;
	uintptr_t lo, hi;	/* the object's extent */
};

static struct slot slots[64];
static int nslots;

static const void *dptr(ElfW(Addr) v, uintptr_t base)
{
	return (const void *)(v < base ? v + base : v);
}

static void scan_rela(const char *obj, const ElfW(Rela) *rel, size_t size,
		      const ElfW(Sym) *symtab, const char *strtab,
		      uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	size_t i, k;

	for (i = 0; i < size / sizeof(*rel); i++) {
		unsigned type = ELF64_R_TYPE(rel[i].r_info);
		const char *name;

		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		name = strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name;
		for (k = 0; k < sizeof(family) / sizeof(family[0]); k++)
			if (strcmp(name, family[k]) == 0 &&
			    nslots < (int)(sizeof(slots) / sizeof(slots[0])))
				slots[nslots++] = (struct slot){
					obj, family[k], type == R_X86_64_JUMP_SLOT,
					(void **)(base + rel[i].r_offset), lo, hi };
	}
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *obj;
	const ElfW(Dyn) *dyn = NULL, *d;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	size_t jmprelsz = 0, relasz = 0;
	uintptr_t base = info->dlpi_addr, lo = UINTPTR_MAX, hi = 0;
	int i;

	(void)size;
	(void)arg;
	if (!info->dlpi_name[0] && !nslots)
		obj = "exe";	/* the first object, unnamed */
	else if (strstr(info->dlpi_name, "libgotlib.so"))
		obj = "lib";
	else
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD) {
			if (base + ph->p_vaddr < lo)
				lo = base + ph->p_vaddr;
			if (base + ph->p_vaddr + ph->p_memsz > hi)
				hi = base + ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_DYNAMIC) {
			dyn = (const void *)(base + ph->p_vaddr);
		}
	}
	if (!dyn)
		return 0;
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = dptr(d->d_un.d_ptr, base); break;
		case DT_STRTAB: strtab = dptr(d->d_un.d_ptr, base); break;
		case DT_JMPREL: jmprel = dptr(d->d_un.d_ptr, base); break;
		case DT_PLTRELSZ: jmprelsz = d->d_un.d_val; break;
		case DT_RELA: rela = dptr(d->d_un.d_ptr, base); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel)
		scan_rela(obj, jmprel, jmprelsz, symtab, strtab, base, lo, hi);
	if (rela)
		scan_rela(obj, rela, relasz, symtab, strtab, base, lo, hi);
	return 0;
}

/* rwxp of the mapping holding @addr, from /proc/self/maps */
static void perms_of(const void *addr, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	strcpy(out, "????");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
		    (uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
			memcpy(out, perms, 5);
			break;
		}
	}
	fclose(f);
}

static void report_slots(void)
{
	int i;

	nslots = 0;
	/* dladdr and stdio only after the walk: not under the loader lock */
	dl_iterate_phdr(scan_object, NULL);
	printf("slots");
	for (i = 0; i < nslots; i++) {
		void *v = __atomic_load_n(slots[i].addr, __ATOMIC_ACQUIRE);
		const char *cls = "other";
		Dl_info info;
		char perms[5];

		if ((uintptr_t)v >= slots[i].lo && (uintptr_t)v < slots[i].hi)
			cls = "lazy";
		else if (dladdr(v, &info) && info.dli_fname &&
			 strstr(info.dli_fname, "libmwrap"))
			cls = "mwrap";
		else if (dladdr(v, &info) && info.dli_fname &&
			 strstr(info.dli_fname, "/libc.so"))
			cls = "libc";
		perms_of(slots[i].addr, perms);
		printf(" %s:%s:%s=%s:%p:%s", slots[i].obj, slots[i].name,
		       slots[i].jump ? "jump" : "glob", cls, v, perms);
	}
	printf("\n");
}

int main(void)
{
	char line[128];

#ifdef GOTM_TAKE_ADDRESS
	gotm_malloc_cb = malloc;
#endif
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long k = 0, i;
		char what[8];

		if (sscanf(line, "round %lu %7s", &k, what) == 2) {
			for (i = 0; i < k; i++) {
				if (strcmp(what, "mf") == 0)
					round_mf();
				else
					round_all();
			}
			printf("round %lu blocks=%zu\n", k, nblocks);
		} else if (strncmp(line, "free", 4) == 0) {
			printf("freed %zu\n", free_all());
		} else if (strncmp(line, "slots", 5) == 0) {
			report_slots();
		} else {
			printf("unknown\n");
		}
		fflush(stdout);
	}
	free_all();
	free(blocks);
	printf("bye %s\n", corrupt ? "CORRUPT" : "OK");
	return corrupt;
}
