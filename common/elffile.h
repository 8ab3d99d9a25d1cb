/* SPDX-License-Identifier: MIT */
/* elffile.h - an ELF64 file's headers, read with pread into memory of our
 * own: never malloc, never stdio, never a mapping of the file (a file
 * truncated under us must not SIGBUS the process we run in), every
 * offset and count checked against the file before it is read.  The
 * one ELF reader of the injector (a target's libraries: dynamic
 * symbols, relocations, code) and the library (function tables).
 */
#ifndef MW_ELFFILE_H
#define MW_ELFFILE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds on what one file may cost (beyond them: -EFBIG): */
#define MW_ELF_SHNUM_MAX 4096u			/* section headers */
#define MW_ELF_STRTAB_MAX (64u << 20)		/* bytes of names read */

struct mw_elf {
	int fd;
	uint64_t fsize;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph;		/* eh.e_phnum of them */
	Elf64_Shdr *sh;		/* shnum of them (0 without sections) */
	size_t shnum;
	void *map;		/* ph and sh; what mw_elf_close unmaps */
	size_t maplen;
};

/* Reads and checks the headers of the ELF64 file open at @fd (a regular
 * file, of this machine's byte order) into @e.  Returns 0, -ENOEXEC
 * (not an ELF64 file, or malformed), -EFBIG, -ENOMEM or -errno; @e
 * needs mw_elf_close only after 0.  @fd stays the caller's.
 * Context: not a hook (file reads); never allocates (mmap). */
int mw_elf_open(struct mw_elf *e, int fd);

void mw_elf_close(struct mw_elf *e);

/* All @len bytes at @off of @e's file into @buf.  Returns 0, -ENOEXEC
 * if they are not all inside the file, or -errno.  Context: as above. */
int mw_elf_read(const struct mw_elf *e, void *buf, size_t len, uint64_t off);

/* Section @i's @len bytes from @off into memory of its own (plus a NUL
 * byte after them), checked to lie in the file: *@out, to be freed
 * with mw_elf_unmap(*@out, @len).  Returns 0, -ENOEXEC, -ENOMEM or
 * -errno.  Context: as above. */
int mw_elf_map_copy(const struct mw_elf *e, uint64_t off, size_t len,
		    void **out);
void mw_elf_unmap(void *p, size_t len);

/* @n rounded up to whole pages. */
size_t mw_elf_page_up(size_t n);

/* Does [@off, @off + @len) lie in the first @size bytes? */
static inline int mw_elf_within(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

#endif
