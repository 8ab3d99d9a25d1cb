/* SPDX-License-Identifier: MIT */
/* command.h - the control file's command language.
 *
 * One command per line:
 *   dump [--json] [--scan] [--top N] [PATH]
 *                          append a dump to PATH (default: the dump path
 *                          given at attach); --json for JSON Lines;
 *                          --scan splits live bytes into referenced and
 *                          unreferenced (a conservative pointer scan);
 *                          --top N keeps the N sites with most live bytes
 *   objects [--dump-all HEAP_PATH] PATH
 *                          the Ruby object view (count_objects, memsize by
 *                          type, GC.stat, iseq memory) as one JSON line in
 *                          PATH, taken by a Ruby thread at a safe point;
 *                          --dump-all adds ObjectSpace.dump_all
 *   gc                     a full GC (GC.start) on a Ruby thread at a safe
 *                          point; answers "ok gc us=N live_before=BYTES
 *                          live_after=BYTES" (tracked live bytes)
 *   reset                  zero the counters (a new window starts)
 *   stats                  one line of key=value figures
 *   lease [PID]            renew the lease (attach option lease:SECONDS),
 *                          as the window's owner, front end PID (shown by
 *                          stats as lease_owner): only this command renews
 *                          it, so another front end's look at a window
 *                          left by a dead owner never keeps it alive (the
 *                          time the helper spends running commands does
 *                          not count against the lease)
 *   detach [--discard]     final dump, restore everything, stop;
 *                          --discard: no final dump, and the runtime
 *                          directory is removed
 * A PATH is absolute, or a plain name (no '/'): a file in the runtime
 * directory (a fresh private directory made at attach).
 * Each command gets exactly one answer line starting with "ok" or
 * "error:"; a long one (dump, objects, gc) may first write lines starting
 * "progress " (what, done/total, unit), which clients skip or show.
 */
#ifndef MW_COMMAND_H
#define MW_COMMAND_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

enum mw_cmd_kind {
	MW_CMD_DUMP,
	MW_CMD_RESET,
	MW_CMD_STATS,
	MW_CMD_DETACH,
	MW_CMD_OBJECTS,
	MW_CMD_LEASE,
	MW_CMD_GC,
};

struct mw_cmd {
	enum mw_cmd_kind kind;
	int json;
	int scan;		/* dump --scan */
	uint32_t top;		/* dump --top N; 0: every site */
	int discard;		/* detach --discard */
	uint32_t owner;		/* lease PID; 0 if not given */
	char path[PATH_MAX];	/* "" for the default */
	char heap_path[PATH_MAX];	/* objects --dump-all; "" if none */
};

#define MW_CMD_LINE_MAX 4096

/* Parses one line (without its newline; @len bytes, may hold NULs).
 * Returns 0, or -EINVAL with a one-line reason in @err.
 * Context: no allocation, no stdio. */
int mw_cmd_parse(const char *line, size_t len, struct mw_cmd *cmd,
		 char *err, size_t errlen);

#endif
