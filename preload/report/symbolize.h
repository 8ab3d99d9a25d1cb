/* SPDX-License-Identifier: MIT */
/* symbolize.h - a site's name for people: its Ruby location, or where
 * its caller's address lies (object, symbol, offset), found at dump time.
 */
#ifndef MW_SYMBOLIZE_H
#define MW_SYMBOLIZE_H

#include <stddef.h>

#include "core/sites.h"

/* Writes the location of @s into @buf: "path:line" for Ruby sites, else
 * "binary(symbol+0xOFF)[0xADDR]" or "binary(+0xOFF)[0xADDR]" resolved
 * now with dladdr.  Returns the length (truncated to @len - 1).
 * Context: not a hook (dladdr takes the loader lock). */
size_t mw_site_name(const struct mw_site *s, char *buf, size_t len);

#endif
