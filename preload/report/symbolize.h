/* SPDX-License-Identifier: MIT */
/* symbolize.h - a site's name for people: its Ruby location, or where
 * its caller's address lies (object, function, offset), found at dump
 * time.
 *
 * A native address is named by the function whose extent covers it, from
 * the object's own file: its .symtab where it has one, else the .symtab
 * of its debug file (/usr/lib/debug/.build-id/), else its .dynsym.  A
 * file is used only when it is the object mapped here (its load segments
 * and build id are the ones in memory); otherwise dladdr names exported
 * functions, checked the same way.  Each object's table is read once and
 * kept while the object stays loaded as it was (a bounded cache: MW_ELF_*
 * per object, 256 MiB in all, 512 objects), until mw_symbolize_drop.
 */
#ifndef MW_SYMBOLIZE_H
#define MW_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "base/fmt.h"
#include "core/sites.h"

/* Writes the location of @s into @buf: "path:line" for Ruby sites, else
 * "binary(function+0xOFF)[0xADDR]" or, with no function covering the
 * address, "binary(+0xOFF)[0xADDR]" (OFF from the object's first
 * mapping), or "[0xADDR]" outside every loaded object.  Returns the
 * length (truncated to @len - 1).
 * Context: not a hook, not a signal handler (the loader's lock, file
 * reads, a spin lock of its own held meanwhile); never allocates. */
size_t mw_site_name(const struct mw_site *s, char *buf, size_t len);

/* A new pass number for mw_site_name_pass (never 0).  Context: any. */
uint32_t mw_symbolize_pass(void);

/* mw_site_name, remembering that pass @pass named a site in the object
 * at @s's address (for mw_symbolize_mappings_json).
 * Context: as mw_site_name. */
size_t mw_site_name_pass(const struct mw_site *s, char *buf, size_t len,
			 uint32_t pass);

/* One JSON Lines record per object in which pass @pass named a site:
 *   {"type":"mapping","path":...,"start":...,"limit":...,"offset":...,
 *    "build_id":"hex","symbols":"symtab"|"debug"|"dynsym"|"dladdr"}
 * start and limit bound its mappings, offset is the file offset at
 * start, build_id is left out when it has none; symbols says where its
 * names came from (debug: /usr/lib/debug's .symtab; dladdr: its file
 * could not be read, exported functions only).
 * Context: as mw_site_name. */
void mw_symbolize_mappings_json(struct mw_out *o, uint32_t pass);

/* Bytes mapped for the objects' tables.  Context: any; a racy read. */
uint64_t mw_symbolize_memory(void);

/* Unmaps every object's table (a detach leaves no memory behind; a later
 * name reads them again).  Context: as mw_site_name. */
void mw_symbolize_drop(void);

/* In a forked child: the lock a thread of the parent may have held is
 * free.  Context: pthread_atfork child handler. */
void mw_symbolize_fork_child(void);

#endif
