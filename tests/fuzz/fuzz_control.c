/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the control-file command parser takes bytes from a
 * file any process of the target's user can write. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/command.h"

/* A parsed path is terminated, and absolute or a plain name (a file in
 * the runtime directory: no '/', not "." or ".."), or "" (none). */
static int path_ok(const char *p, size_t len)
{
	if (strnlen(p, len) == len)
		return 0;
	if (!p[0] || p[0] == '/')
		return 1;
	return !strchr(p, '/') && strcmp(p, ".") && strcmp(p, "..");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mw_cmd cmd;
	char err[160];
	size_t i;

	if (mw_cmd_parse((const char *)data, size, &cmd, err, sizeof(err)) == 0) {
		if (!path_ok(cmd.path, sizeof(cmd.path)) ||
		    !path_ok(cmd.heap_path, sizeof(cmd.heap_path)))
			abort();
	} else {
		if (!err[0] || strnlen(err, sizeof(err)) == sizeof(err))
			abort();
		for (i = 0; err[i]; i++)	/* answers stay one line */
			if ((unsigned char)err[i] < 0x20)
				abort();
	}
	return 0;
}
