/* SPDX-License-Identifier: MIT */
/* elfsym.c - see elfsym.h */
#define _GNU_SOURCE
#include "base/elfsym.h"
#include "common/elffile.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 2048	/* symbols or relocations per read */
#define CODE_MAX (512u << 20)	/* bytes of one segment searched */

/* Opens the ELF64 file at @path.  The files are the target's (its libc,
 * a copy of our library in a directory its user owns): a FIFO or a
 * symlink put there meanwhile must not block us nor lead us elsewhere.
 * 0 (close it with done()) or -errno / -ENOEXEC. */
static int open_elf(const char *path, struct mw_elf *e)
{
	int ret, fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ret = mw_elf_open(e, fd);
	if (ret)
		close(fd);
	return ret;
}

static void done(struct mw_elf *e)
{
	close(e->fd);
	mw_elf_close(e);
}

/* The names of dynamic symbol table @symsh: its string table, read
 * whole into *@names (*@len bytes, NUL after them).  0 or -errno. */
static int read_names(const struct mw_elf *e, const Elf64_Shdr *symsh,
		      char **names, size_t *len)
{
	const Elf64_Shdr *str;

	if (symsh->sh_link >= e->shnum)
		return -ENOEXEC;
	str = &e->sh[symsh->sh_link];
	if (str->sh_size > MW_ELF_STRTAB_MAX)
		return -EFBIG;
	*len = (size_t)str->sh_size;
	return mw_elf_map_copy(e, str->sh_offset, *len, (void **)names);
}

/* @sym's name in @names (@len bytes, a NUL after them), or NULL. */
static const char *sym_name(const Elf64_Sym *sym, const char *names,
			    size_t len)
{
	return sym->st_name < len ? names + sym->st_name : NULL;
}

/* In the dynamic symbol table @symsh: a defined symbol named @name. */
static int find_in(const struct mw_elf *e, const Elf64_Shdr *symsh,
		   const char *name, uint64_t *value)
{
	Elf64_Sym sym[CHUNK];
	uint64_t n = symsh->sh_size / sizeof(Elf64_Sym), i, k, m;
	size_t len;
	char *names;
	int ret = read_names(e, symsh, &names, &len);

	if (ret)
		return ret;
	for (i = 0, ret = -ENOENT; i < n && ret == -ENOENT; i += m) {
		m = n - i < CHUNK ? n - i : CHUNK;
		ret = mw_elf_read(e, sym, m * sizeof(*sym),
				  symsh->sh_offset + i * sizeof(*sym));
		for (k = 0; !ret && k < m; k++) {
			const char *s = sym_name(&sym[k], names, len);

			if (s && sym[k].st_shndx != SHN_UNDEF &&
			    sym[k].st_value && strcmp(s, name) == 0) {
				*value = sym[k].st_value;
				break;
			}
		}
		if (!ret && k == m)
			ret = -ENOENT;
	}
	mw_elf_unmap(names, len);
	return ret;
}

int mwi_elf_symbol(const char *path, const char *name, uint64_t *value)
{
	struct mw_elf e;
	size_t i;
	int ret = open_elf(path, &e);

	if (ret)
		return ret;
	for (i = 0, ret = -ENOENT; i < e.shnum && ret == -ENOENT; i++)
		if (e.sh[i].sh_type == SHT_DYNSYM)
			ret = find_in(&e, &e.sh[i], name, value);
	done(&e);
	return ret;
}

/* In relocation section @relsh (against a dynamic symbol table): one of
 * @type against the symbol @name. */
static int reloc_in(const struct mw_elf *e, const Elf64_Shdr *relsh,
		    const char *name, uint32_t type, uint64_t *vaddr)
{
	const Elf64_Shdr *symsh = &e->sh[relsh->sh_link];
	Elf64_Rela r[CHUNK];
	uint64_t n = relsh->sh_size / sizeof(Elf64_Rela), i, k, m;
	size_t len;
	char *names;
	int ret = read_names(e, symsh, &names, &len);

	if (ret)
		return ret;
	for (i = 0, ret = -ENOENT; i < n && ret == -ENOENT; i += m) {
		m = n - i < CHUNK ? n - i : CHUNK;
		if (mw_elf_read(e, r, m * sizeof(*r),
				relsh->sh_offset + i * sizeof(*r)))
			break;	/* as the old reader: a bad table, skipped */
		for (k = 0; k < m && ret == -ENOENT; k++) {
			uint64_t at = ELF64_R_SYM(r[k].r_info);
			Elf64_Sym sym;
			const char *s;

			if (ELF64_R_TYPE(r[k].r_info) != type ||
			    at >= symsh->sh_size / sizeof(sym) ||
			    mw_elf_read(e, &sym, sizeof(sym),
					symsh->sh_offset + at * sizeof(sym)))
				continue;
			s = sym_name(&sym, names, len);
			if (s && strcmp(s, name) == 0) {
				*vaddr = r[k].r_offset;
				ret = 0;
			}
		}
	}
	mw_elf_unmap(names, len);
	return ret;
}

int mwi_elf_reloc_slot(const char *path, const char *name, uint32_t type,
		       uint64_t *vaddr)
{
	struct mw_elf e;
	size_t i;
	int ret = open_elf(path, &e);

	if (ret)
		return ret;
	for (i = 0, ret = -ENOENT; i < e.shnum && ret; i++)
		if (e.sh[i].sh_type == SHT_RELA && e.sh[i].sh_link < e.shnum &&
		    e.sh[e.sh[i].sh_link].sh_type == SHT_DYNSYM &&
		    reloc_in(&e, &e.sh[i], name, type, vaddr) == 0)
			ret = 0;
	done(&e);
	return ret;
}

int mwi_elf_find_code(const char *path, const void *code, size_t len,
		      uint64_t *vaddr)
{
	struct mw_elf e;
	size_t i;
	int ret = open_elf(path, &e);

	if (ret)
		return ret;
	for (i = 0, ret = -ENOENT; i < e.eh.e_phnum && ret; i++) {
		const Elf64_Phdr *ph = &e.ph[i];
		const unsigned char *hit;
		void *seg;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    ph->p_filesz > CODE_MAX ||
		    mw_elf_map_copy(&e, ph->p_offset, (size_t)ph->p_filesz, &seg))
			continue;
		hit = memmem(seg, (size_t)ph->p_filesz, code, len);
		if (hit) {
			*vaddr = ph->p_vaddr + (uint64_t)(hit - (unsigned char *)seg);
			ret = 0;
		}
		mw_elf_unmap(seg, (size_t)ph->p_filesz);
	}
	done(&e);
	return ret;
}

/* In dynamic section @dynsh: each DT_NEEDED name, to @fn. */
static int needed_in(const struct mw_elf *e, const Elf64_Shdr *dynsh,
		     int (*fn)(const char *name, void *arg), void *arg)
{
	Elf64_Dyn d[CHUNK];
	uint64_t n = dynsh->sh_size / sizeof(Elf64_Dyn), i, k, m;
	const Elf64_Shdr *str;
	size_t len;
	char *names;
	int ret = 0, stop = 0;

	if (dynsh->sh_link >= e->shnum)
		return -ENOEXEC;
	str = &e->sh[dynsh->sh_link];
	if (str->sh_size > MW_ELF_STRTAB_MAX)
		return -EFBIG;
	len = (size_t)str->sh_size;
	ret = mw_elf_map_copy(e, str->sh_offset, len, (void **)&names);
	if (ret)
		return ret;
	for (i = 0; i < n && !ret && !stop; i += m) {
		m = n - i < CHUNK ? n - i : CHUNK;
		ret = mw_elf_read(e, d, m * sizeof(*d),
				  dynsh->sh_offset + i * sizeof(*d));
		for (k = 0; !ret && !stop && k < m; k++) {
			if (d[k].d_tag == DT_NULL) {
				stop = 1;
				break;
			}
			if (d[k].d_tag == DT_NEEDED && d[k].d_un.d_val < len)
				stop = fn(names + d[k].d_un.d_val, arg);
		}
	}
	mw_elf_unmap(names, len);
	return ret;
}

int mwi_elf_needed(const char *path, int (*fn)(const char *name, void *arg),
		   void *arg)
{
	struct mw_elf e;
	size_t i;
	int ret = open_elf(path, &e);

	if (ret)
		return ret;
	for (i = 0, ret = -ENOENT; i < e.shnum; i++)
		if (e.sh[i].sh_type == SHT_DYNAMIC) {
			ret = needed_in(&e, &e.sh[i], fn, arg);
			break;
		}
	done(&e);
	return ret;
}
