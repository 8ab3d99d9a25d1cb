/* SPDX-License-Identifier: MIT */
/* elfsyms.c - see elfsyms.h */
#define _GNU_SOURCE
#include "base/elfsyms.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK_SYMS 2048		/* symbols per read: 48 KiB */
#define SYMS_MAX (16u << 20)	/* symbols in the table read (384 MiB) */
#define NOTE_MAX 4096		/* bytes of one note section read */

size_t mw_elf_build_id(const void *notes, size_t len, size_t align,
		       const uint8_t **id)
{
	const uint8_t *p = notes, *end = p + len;

	align = align == 8 ? 8 : 4;
	while ((size_t)(end - p) >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name, desc;

		memcpy(&nh, p, sizeof(nh));
		name = ((size_t)nh.n_namesz + align - 1) & ~(align - 1);
		desc = ((size_t)nh.n_descsz + align - 1) & ~(align - 1);
		p += sizeof(nh);
		if (name > (size_t)(end - p) || desc > (size_t)(end - p) - name)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p, "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= MW_ELF_BUILD_ID_MAX) {
			*id = p + name;
			return nh.n_descsz;
		}
		p += name + desc;
	}
	return 0;
}

/* The file's PT_LOAD entries, in order, are @want's. */
static int same_loads(const Elf64_Phdr *ph, size_t n, const Elf64_Phdr *w,
		      size_t wn)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < n && ph[i].p_type != PT_LOAD)
			i++;
		while (j < wn && w[j].p_type != PT_LOAD)
			j++;
		if (i == n || j == wn)
			return i == n && j == wn;
		if (ph[i].p_vaddr != w[j].p_vaddr ||
		    ph[i].p_memsz != w[j].p_memsz ||
		    ph[i].p_filesz != w[j].p_filesz ||
		    ph[i].p_offset != w[j].p_offset ||
		    ph[i].p_flags != w[j].p_flags)
			return 0;
		i++;
		j++;
	}
}

/* The file's build id (its note sections', else its PT_NOTE segments')
 * into @id; its length, 0 if none, or -errno.  @buf: NOTE_MAX bytes. */
static long file_build_id(const struct mw_elf *e, uint8_t *buf, uint8_t *id)
{
	const Elf64_Shdr *sh = e->sh;
	const Elf64_Phdr *ph = e->ph;
	size_t shnum = e->shnum, phnum = e->eh.e_phnum;
	int sections = 0;
	size_t i;

	for (i = 0; i < shnum + phnum; i++) {
		uint64_t off, len, align;
		const uint8_t *p;
		size_t n;
		int ret;

		if (i < shnum) {
			if (sh[i].sh_type != SHT_NOTE)
				continue;
			sections = 1;
			off = sh[i].sh_offset;
			len = sh[i].sh_size;
			align = sh[i].sh_addralign;
		} else {
			if (sections || ph[i - shnum].p_type != PT_NOTE)
				continue;
			off = ph[i - shnum].p_offset;
			len = ph[i - shnum].p_filesz;
			align = ph[i - shnum].p_align;
		}
		if (len > NOTE_MAX)
			len = NOTE_MAX;
		ret = mw_elf_read(e, buf, (size_t)len, off);
		if (ret)
			return ret;
		n = mw_elf_build_id(buf, (size_t)len, (size_t)align, &p);
		if (n) {
			memcpy(id, p, n);
			return (long)n;
		}
	}
	return 0;
}

/* Ascending by start, then rank, then name. */
static int func_less(const struct mw_elf_func *x, const struct mw_elf_func *y)
{
	if (x->start != y->start)
		return x->start < y->start;
	if (x->rank != y->rank)
		return x->rank < y->rank;
	return x->name < y->name;
}

/* Sorts the @n functions at @f with @tmp (room for @n more): a bottom-up
 * merge sort, sequential in memory (500,000 functions in random order:
 * 95 ms where mw_bheap_sort took 595), and nothing to do for a table
 * already in order. */
static void sort_funcs(struct mw_elf_func *f, struct mw_elf_func *tmp, size_t n)
{
	struct mw_elf_func *src = f, *dst = tmp, *t;
	size_t width, i;

	for (i = 1; i < n && !func_less(&f[i], &f[i - 1]); i++)
		;
	if (i >= n)
		return;
	for (width = 1; width < n; width *= 2) {
		for (i = 0; i < n; i += 2 * width) {
			size_t mid = i + width < n ? i + width : n;
			size_t end = i + 2 * width < n ? i + 2 * width : n;
			size_t a = i, b = mid, k = i;

			while (a < mid && b < end)
				dst[k++] = func_less(&src[b], &src[a]) ?
					   src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < end)
				dst[k++] = src[b++];
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != f)
		memcpy(f, src, n * sizeof(*f));
}

/* Lower ranks win at one address: sized, global, default visibility,
 * fewest leading underscores ("malloc" over "__libc_malloc"). */
static uint32_t rank_of(const Elf64_Sym *s, const char *name)
{
	uint32_t r = 0, u = 0;

	if (!s->st_size)
		r |= 8u << 8;
	if (ELF64_ST_BIND(s->st_info) == STB_WEAK)
		r |= 2u << 8;
	else if (ELF64_ST_BIND(s->st_info) != STB_GLOBAL)
		r |= 4u << 8;
	if (ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
		r |= 1u << 8;
	while (name[u] == '_' && u < 255)
		u++;
	return r | u;
}

/* A function defined in an executable section, with a name. */
static int is_function(const Elf64_Sym *s, const Elf64_Shdr *sh,
		       size_t shnum, uint64_t strsize)
{
	unsigned type = ELF64_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) &&
	       s->st_shndx != SHN_UNDEF && s->st_shndx < shnum &&
	       (sh[s->st_shndx].sh_flags & SHF_EXECINSTR) &&
	       s->st_name && s->st_name < strsize;
}

struct reader {
	struct mw_elf elf;
	Elf64_Sym *chunk;	/* in scratch */
	uint8_t *note;		/* in scratch */
};

/* The symbol table to read: .symtab, else .dynsym; its index, or -1. */
static long pick_table(const struct reader *r)
{
	long dyn = -1;
	size_t i;

	for (i = 0; i < r->elf.shnum; i++) {
		if (r->elf.sh[i].sh_type == SHT_SYMTAB)
			return (long)i;
		if (r->elf.sh[i].sh_type == SHT_DYNSYM && dyn < 0)
			dyn = (long)i;
	}
	return dyn;
}

/* Reads the functions of table @sh (its names already in @out) into
 * @out->func, at most @cap of them. */
static int read_funcs(struct reader *r, const Elf64_Shdr *sh, uint64_t strsize,
		      struct mw_elf_syms *out, size_t cap)
{
	struct mw_elf_func *f = (struct mw_elf_func *)out->func;
	uint64_t nsyms = sh->sh_size / sizeof(Elf64_Sym), i = 0;
	size_t n = 0;

	while (i < nsyms) {
		size_t k, m = nsyms - i < CHUNK_SYMS ? (size_t)(nsyms - i)
						     : CHUNK_SYMS;
		int ret = mw_elf_read(&r->elf, r->chunk, m * sizeof(Elf64_Sym),
				      sh->sh_offset + i * sizeof(Elf64_Sym));

		if (ret)
			return ret;
		for (k = 0; k < m; k++) {
			const Elf64_Sym *s = &r->chunk[k];

			if (!is_function(s, r->elf.sh, r->elf.shnum, strsize) ||
			    !out->names[s->st_name])
				continue;
			if (n == cap)
				return -EFBIG;
			f[n].start = s->st_value;
			f[n].size = s->st_size;
			f[n].name = s->st_name;
			f[n].rank = rank_of(s, out->names + s->st_name);
			n++;
		}
		i += m;
	}
	/* sorted, then the best name of each address */
	sort_funcs(f, f + cap, n);
	out->n = 0;
	for (i = 0; i < n; i++)
		if (!out->n || f[out->n - 1].start != f[i].start)
			f[out->n++] = f[i];
	return 0;
}

static int read_table(struct reader *r, const struct mw_elf_want *want,
		      struct mw_elf_syms *out)
{
	const struct mw_elf *e = &r->elf;
	const Elf64_Shdr *sh, *str;
	uint8_t id[MW_ELF_BUILD_ID_MAX];
	size_t names_len, funcs_len, cap, used;
	uint64_t nsyms;
	long ret, t;

	if (want && want->phdr &&
	    !same_loads(e->ph, e->eh.e_phnum, want->phdr, want->phnum))
		return -ESTALE;
	if (want && want->check_build_id) {
		ret = file_build_id(e, r->note, id);
		if (ret < 0)
			return (int)ret;
		if ((size_t)ret != want->build_id_len ||
		    memcmp(id, want->build_id, (size_t)ret))
			return -ESTALE;
	}
	t = pick_table(r);
	if (t < 0)
		return -ENOENT;
	sh = &e->sh[t];
	if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= e->shnum ||
	    !mw_elf_within(sh->sh_offset, sh->sh_size, e->fsize))
		return -ENOEXEC;
	str = &e->sh[sh->sh_link];
	if (str->sh_type != SHT_STRTAB ||
	    !mw_elf_within(str->sh_offset, str->sh_size, e->fsize))
		return -ENOEXEC;
	nsyms = sh->sh_size / sizeof(Elf64_Sym);
	if (str->sh_size > MW_ELF_STRTAB_MAX || nsyms > SYMS_MAX)
		return -EFBIG;

	/* names, then the functions (at most one per symbol), then as much
	 * room to sort them: pages never written cost nothing, and all past
	 * the functions kept are given back below */
	cap = nsyms < MW_ELF_FUNCS_MAX ? (size_t)nsyms : MW_ELF_FUNCS_MAX;
	names_len = mw_elf_page_up((size_t)str->sh_size + 1);
	funcs_len = mw_elf_page_up(2 * cap * sizeof(struct mw_elf_func));
	out->maplen = names_len + funcs_len;
	out->map = mmap(NULL, out->maplen, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (out->map == MAP_FAILED) {
		out->map = NULL;
		return -ENOMEM;
	}
	out->names = out->map;
	out->func = (struct mw_elf_func *)((char *)out->map + names_len);
	/* the extra byte past the table stays NUL: every name ends */
	ret = mw_elf_read(e, out->map, (size_t)str->sh_size, str->sh_offset);
	if (!ret)
		ret = read_funcs(r, sh, str->sh_size, out, cap);
	if (ret)
		return (int)ret;
	used = names_len + mw_elf_page_up(out->n * sizeof(struct mw_elf_func));
	if (used < out->maplen) {
		munmap((char *)out->map + used, out->maplen - used);
		out->maplen = used;
	}
	out->table = sh->sh_type == SHT_SYMTAB ? MW_ELF_SYMTAB : MW_ELF_DYNSYM;
	return 0;
}

int mw_elf_syms_read(int fd, const struct mw_elf_want *want,
		     struct mw_elf_syms *out)
{
	struct reader r;
	size_t len = CHUNK_SYMS * sizeof(Elf64_Sym) + NOTE_MAX;
	char *scratch;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = mw_elf_open(&r.elf, fd);
	if (ret)
		return ret;
	/* one chunk of symbols and a note, in one scratch mapping */
	scratch = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (scratch == MAP_FAILED) {
		mw_elf_close(&r.elf);
		return -ENOMEM;
	}
	r.chunk = (Elf64_Sym *)scratch;
	r.note = (uint8_t *)(scratch + len - NOTE_MAX);
	ret = read_table(&r, want, out);
	munmap(scratch, len);
	mw_elf_close(&r.elf);
	if (ret)
		mw_elf_syms_free(out);
	return ret;
}

static int covers(const struct mw_elf_func *f, uint64_t vaddr)
{
	return f->size ? vaddr - f->start < f->size : vaddr == f->start;
}

const char *mw_elf_syms_find(const struct mw_elf_syms *t, uint64_t vaddr,
			     uint64_t *off)
{
	size_t lo = 0, hi = t->n, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->func[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo functions start at or below @vaddr: the nearest may have
	 * ended before it while one that starts lower still covers it (a
	 * function with a labelled part inside), so look a few further */
	for (k = 0; lo-- > 0 && k < 8; k++) {
		const struct mw_elf_func *f = &t->func[lo];

		if (covers(f, vaddr)) {
			*off = vaddr - f->start;
			return t->names + f->name;
		}
	}
	return NULL;
}

void mw_elf_syms_free(struct mw_elf_syms *t)
{
	if (t->map)
		munmap(t->map, t->maplen);
	memset(t, 0, sizeof(*t));
}
