/* SPDX-License-Identifier: MIT */
/* elfsym.h - dynamic symbol lookup in an ELF file on disk. */
#ifndef MWI_ELFSYM_H
#define MWI_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Finds @name (a defined function or object) in the .dynsym of the
 * ELF64 file at @path.  Returns 0 and its st_value in *@value, -ENOENT
 * if absent, -ENOEXEC for a malformed file, or -errno. */
int mwi_elf_symbol(const char *path, const char *name, uint64_t *value);

/* Finds the first occurrence of @len bytes @code in an executable
 * segment of the ELF64 file at @path; *@vaddr gets its virtual address
 * (add the load base).  Returns 0, -ENOENT, -ENOEXEC or -errno. */
int mwi_elf_find_code(const char *path, const void *code, size_t len,
		      uint64_t *vaddr);

/* Finds the dynamic relocation of type @type (an R_<arch>_* number)
 * against symbol @name in the ELF64 file at @path: *@vaddr gets the
 * virtual address it patches (add the load base), e.g. the GOT slot
 * that the loader fills with a TLS variable's offset.  Returns 0,
 * -ENOENT, -ENOEXEC or -errno. */
int mwi_elf_reloc_slot(const char *path, const char *name, uint32_t type,
		       uint64_t *vaddr);

/* Calls @fn with each name of a DT_NEEDED entry of the ELF64 file at
 * @path, in order, until it returns non-zero.  Returns 0, -ENOENT (no
 * dynamic section: a static file), -ENOEXEC or -errno. */
int mwi_elf_needed(const char *path, int (*fn)(const char *name, void *arg),
		   void *arg);

#endif
