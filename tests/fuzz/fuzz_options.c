/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the MWRAP= / mw_attach option parser must never
 * crash, overrun or accept malformed input half-way. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mw_options o;
	char err[160];
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';		/* the parser takes a C string */
	if (mw_options_parse(s, &o, err, sizeof(err)) == 0) {
		if (strnlen(o.dump_path, sizeof(o.dump_path)) ==
		    sizeof(o.dump_path))
			abort();	/* unterminated path */
	} else if (strnlen(err, sizeof(err)) == sizeof(err) || !err[0] ||
		   o.dump_fd != -1 || o.dump_path[0]) {
		abort();	/* no message, or options left half-set */
	}
	free(s);
	return 0;
}
