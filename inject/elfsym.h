/* elfsym.h - dynamic symbol lookup in an ELF file on disk. */
#ifndef MWI_ELFSYM_H
#define MWI_ELFSYM_H

#include <stdint.h>

/* Finds @name (a defined function or object) in the .dynsym of the
 * ELF64 file at @path.  Returns 0 and its st_value in *@value, -ENOENT
 * if absent, -ENOEXEC for a malformed file, or -errno. */
int mwi_elf_symbol(const char *path, const char *name, uint64_t *value);

#endif
