/* SPDX-License-Identifier: MIT */
/* elfsym.c - see elfsym.h */
#define _GNU_SOURCE
#include "elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Maps the ELF64 file at @path read-only; 0 or -errno / -ENOEXEC.  The
 * files are the target's (its libc, a copy of our library in a
 * directory its user owns): a FIFO or a symlink put there meanwhile
 * must not block us nor lead us elsewhere. */
static int map_elf(const char *path, const unsigned char **img, size_t *size)
{
	struct stat st;
	void *m;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -ENOEXEC;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	if (memcmp(m, ELFMAG, SELFMAG) ||
	    ((const unsigned char *)m)[EI_CLASS] != ELFCLASS64) {
		munmap(m, (size_t)st.st_size);
		return -ENOEXEC;
	}
	*img = m;
	*size = (size_t)st.st_size;
	return 0;
}

/* The @count entries of @entsize bytes at @off in the image, or NULL
 * when they do not fit in its @size bytes. */
static const void *table(const unsigned char *img, size_t size, uint64_t off,
			 uint64_t count, size_t entsize)
{
	return off + count * entsize > size ? NULL : img + off;
}

int mwi_elf_symbol(const char *path, const char *name, uint64_t *value)
{
	const unsigned char *img;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	size_t i, size;
	int ret = map_elf(path, &img, &size);

	if (ret)
		return ret;
	eh = (const Elf64_Ehdr *)img;
	sh = table(img, size, eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr));
	ret = sh ? -ENOENT : -ENOEXEC;
	for (i = 0; sh && i < eh->e_shnum; i++) {
		const Elf64_Shdr *strsh;
		const Elf64_Sym *sym;
		size_t n, j;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		strsh = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > size ||
		    strsh->sh_offset + strsh->sh_size > size) {
			ret = -ENOEXEC;
			goto out;
		}
		sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
		n = sh[i].sh_size / sizeof(Elf64_Sym);
		for (j = 0; j < n; j++) {
			const char *s;

			if (sym[j].st_name >= strsh->sh_size ||
			    sym[j].st_shndx == SHN_UNDEF || !sym[j].st_value)
				continue;
			s = (const char *)img + strsh->sh_offset +
			    sym[j].st_name;
			if (strnlen(s, strsh->sh_size - sym[j].st_name) ==
				    strsh->sh_size - sym[j].st_name)
				continue;	/* unterminated */
			if (strcmp(s, name) == 0) {
				*value = sym[j].st_value;
				ret = 0;
				goto out;
			}
		}
	}
out:
	munmap((void *)img, size);
	return ret;
}

/* The name of symbol @i of the .dynsym in section @symsh, or NULL when
 * it is out of bounds or unterminated. */
static const char *dynsym_name(const unsigned char *img, size_t size,
			       const Elf64_Ehdr *eh, const Elf64_Shdr *sh,
			       const Elf64_Shdr *symsh, uint64_t i)
{
	const Elf64_Shdr *strsh;
	const Elf64_Sym *sym;
	const char *s;

	if (symsh->sh_link >= eh->e_shnum ||
	    i >= symsh->sh_size / sizeof(Elf64_Sym) ||
	    symsh->sh_offset + symsh->sh_size > size)
		return NULL;
	strsh = &sh[symsh->sh_link];
	if (strsh->sh_offset + strsh->sh_size > size)
		return NULL;
	sym = (const Elf64_Sym *)(img + symsh->sh_offset) + i;
	if (sym->st_name >= strsh->sh_size)
		return NULL;
	s = (const char *)img + strsh->sh_offset + sym->st_name;
	if (strnlen(s, strsh->sh_size - sym->st_name) ==
	    strsh->sh_size - sym->st_name)
		return NULL;
	return s;
}

int mwi_elf_reloc_slot(const char *path, const char *name, uint32_t type,
		       uint64_t *vaddr)
{
	const unsigned char *img;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	size_t i, size;
	int ret = map_elf(path, &img, &size);

	if (ret)
		return ret;
	eh = (const Elf64_Ehdr *)img;
	sh = table(img, size, eh->e_shoff, eh->e_shnum, sizeof(Elf64_Shdr));
	ret = sh ? -ENOENT : -ENOEXEC;
	for (i = 0; sh && i < eh->e_shnum && ret; i++) {
		const Elf64_Rela *r;
		size_t n, j;

		if (sh[i].sh_type != SHT_RELA || sh[i].sh_link >= eh->e_shnum ||
		    sh[sh[i].sh_link].sh_type != SHT_DYNSYM)
			continue;
		r = table(img, size, sh[i].sh_offset,
			  sh[i].sh_size / sizeof(Elf64_Rela), sizeof(Elf64_Rela));
		if (!r)
			continue;
		n = sh[i].sh_size / sizeof(Elf64_Rela);
		for (j = 0; j < n; j++) {
			const char *s;

			if (ELF64_R_TYPE(r[j].r_info) != type)
				continue;
			s = dynsym_name(img, size, eh, sh, &sh[sh[i].sh_link],
					ELF64_R_SYM(r[j].r_info));
			if (s && strcmp(s, name) == 0) {
				*vaddr = r[j].r_offset;
				ret = 0;
				break;
			}
		}
	}
	munmap((void *)img, size);
	return ret;
}

int mwi_elf_find_code(const char *path, const void *code, size_t len,
		      uint64_t *vaddr)
{
	const unsigned char *img;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	size_t i, size;
	int ret = map_elf(path, &img, &size);

	if (ret)
		return ret;
	eh = (const Elf64_Ehdr *)img;
	ph = table(img, size, eh->e_phoff, eh->e_phnum, sizeof(Elf64_Phdr));
	ret = ph ? -ENOENT : -ENOEXEC;
	for (i = 0; ph && i < eh->e_phnum && ret; i++) {
		const unsigned char *seg, *hit;

		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) ||
		    ph[i].p_offset + ph[i].p_filesz > size)
			continue;
		seg = img + ph[i].p_offset;
		hit = memmem(seg, ph[i].p_filesz, code, len);
		if (hit) {
			*vaddr = ph[i].p_vaddr + (uint64_t)(hit - seg);
			ret = 0;
		}
	}
	munmap((void *)img, size);
	return ret;
}
