/* control.h - the control file's command language.
 *
 * One command per line:
 *   dump [--json] [PATH]   append a dump to PATH (default: the dump path
 *                          given at attach); --json for JSON Lines
 *   reset                  zero the counters (a new window starts)
 *   stats                  one line of key=value figures
 *   detach                 final dump, restore everything, stop
 * Each command gets exactly one answer line starting with "ok" or
 * "error:".
 */
#ifndef MW_CONTROL_H
#define MW_CONTROL_H

#include <limits.h>
#include <stddef.h>

enum mw_cmd_kind {
	MW_CMD_DUMP,
	MW_CMD_RESET,
	MW_CMD_STATS,
	MW_CMD_DETACH,
};

struct mw_cmd {
	enum mw_cmd_kind kind;
	int json;
	char path[PATH_MAX];	/* "" for the default */
};

#define MW_CMD_LINE_MAX 4096

/* Parses one line (without its newline; @len bytes, may hold NULs).
 * Returns 0, or -EINVAL with a one-line reason in @err.
 * Context: no allocation, no stdio. */
int mw_cmd_parse(const char *line, size_t len, struct mw_cmd *cmd,
		 char *err, size_t errlen);

#endif
