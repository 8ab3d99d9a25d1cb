/* SPDX-License-Identifier: MIT */
/* elfsyms.h - an ELF file's functions by address, read with pread into
 * memory of our own (never malloc, never stdio, never a mapping of the
 * file: a file truncated under us must not SIGBUS the process we run in).
 *
 * The table is the file's .symtab where it has one, else its .dynsym;
 * only functions in executable sections are kept, one per address (at
 * one address a sized, global, default-visibility name with the fewest
 * leading underscores wins).  A lookup names the function whose extent
 * [st_value, st_value + st_size) covers the address, never a nearer one
 * below it that ended before.
 */
#ifndef MW_ELFSYMS_H
#define MW_ELFSYMS_H

#include "common/elffile.h"
#include <stddef.h>
#include <stdint.h>

/* Bounds on what one file may cost (beyond them it has no table; and
 * common/elffile.h's): */
#define MW_ELF_FUNCS_MAX (1u << 20)		/* functions kept */
#define MW_ELF_BUILD_ID_MAX 64u			/* bytes (sha1: 20) */

enum mw_elf_table { MW_ELF_NONE = 0, MW_ELF_DYNSYM, MW_ELF_SYMTAB };

struct mw_elf_func {
	uint64_t start;		/* st_value: a link-time address */
	uint64_t size;		/* st_size; 0: its start address only */
	uint32_t name;		/* offset in the table's names */
	uint32_t rank;		/* lower is preferred at one address */
};

struct mw_elf_syms {
	const struct mw_elf_func *func;	/* by start, one per address */
	uint32_t n;
	enum mw_elf_table table;
	const char *names;		/* NUL-terminated strings */
	void *map;			/* what mw_elf_syms_free unmaps */
	size_t maplen;
};

/* What a file must be to stand for an object mapped in memory. */
struct mw_elf_want {
	/* its program headers in memory (the file's PT_LOAD entries must
	 * match them in order: address, sizes, offset, flags), or NULL */
	const Elf64_Phdr *phdr;
	size_t phnum;
	/* when @check_build_id: the file must carry exactly these
	 * @build_id_len bytes as its build id (0: none at all) */
	int check_build_id;
	const uint8_t *build_id;
	size_t build_id_len;
};

/* Reads the function table of the ELF64 file open at @fd (a regular
 * file) into @out, after checking it against @want.  Returns 0, or
 * -ENOEXEC (not an ELF64 file, or malformed), -ESTALE (not the file
 * @want describes), -ENOENT (no symbol table), -EFBIG (beyond the bounds
 * above), -ENOMEM, or -errno of a failed read; @out is then zeroed.
 * @fd is left open at an unspecified offset (pread only).
 * Context: not a hook (file reads); never allocates (mmap); not
 * reentrant per @out. */
int mw_elf_syms_read(int fd, const struct mw_elf_want *want,
		     struct mw_elf_syms *out);

/* The function of @t whose extent covers @vaddr (a link-time address),
 * with *@off set to @vaddr - its start; NULL when none does.
 * Context: any; pure. */
const char *mw_elf_syms_find(const struct mw_elf_syms *t, uint64_t vaddr,
			     uint64_t *off);

/* Unmaps @t's memory and zeroes it.  Context: not a hook (munmap). */
void mw_elf_syms_free(struct mw_elf_syms *t);

/* The NT_GNU_BUILD_ID note among the @len bytes of ELF notes at @notes
 * (a PT_NOTE segment or SHT_NOTE section, aligned to @align: 4 or 8):
 * its length (at most MW_ELF_BUILD_ID_MAX), *@id pointing at its bytes;
 * 0 when there is none.  Context: any; pure. */
size_t mw_elf_build_id(const void *notes, size_t len, size_t align,
		       const uint8_t **id);

#endif
