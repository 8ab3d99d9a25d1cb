/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the control-file command parser takes bytes from a
 * file any process of the target's user can write. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/command.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mw_cmd cmd;
	char err[160];
	size_t i;

	if (mw_cmd_parse((const char *)data, size, &cmd, err, sizeof(err)) == 0) {
		if (strnlen(cmd.path, sizeof(cmd.path)) == sizeof(cmd.path) ||
		    (cmd.path[0] && cmd.path[0] != '/'))
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
