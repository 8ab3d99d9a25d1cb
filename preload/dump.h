/* dump.h - writes the site table to a file descriptor.
 *
 * The same writer serves the exit dump, SIGURG (via the helper thread),
 * the control file and the Ruby API.  It never allocates and never uses
 * stdio, so it can run while other threads are inside our hooks.
 */
#ifndef MW_DUMP_H
#define MW_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "options.h"
#include "sites.h"

/* Writes the location of @s into @buf: "path:line" for Ruby sites, else
 * "binary(symbol+0xOFF)[0xADDR]" or "binary(+0xOFF)[0xADDR]" resolved
 * now with dladdr.  Returns the length (truncated to @len - 1).
 * Context: not a hook (dladdr takes the loader lock). */
size_t mw_site_name(const struct mw_site *s, char *buf, size_t len);

/* Writes every site with total > @min in @format: mwrap's three columns
 * ("%16zu %12zu %s", unsorted) after one "# " header line, or JSON Lines
 * (a header object, then one object per site).
 * Returns 0 or -errno of the first failed write. */
int mw_dump(int fd, uint64_t min, enum mw_format format);

/* Reads this process's resident set size in bytes (0 if unknown). */
uint64_t mw_rss_bytes(void);

#endif
