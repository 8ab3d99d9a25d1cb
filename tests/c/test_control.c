/* SPDX-License-Identifier: MIT */
/* Unit tests for the control-file command parser (preload/base/command.c). */
#include <errno.h>
#include <string.h>

#include "base/command.h"
#include "tap.h"

static struct mw_cmd c;
static char err[160];

static int parse(const char *s)
{
	return mw_cmd_parse(s, strlen(s), &c, err, sizeof(err));
}

int main(void)
{
	static char big[MW_CMD_LINE_MAX + 10];

	ok(parse("dump") == 0 && c.kind == MW_CMD_DUMP && !c.json &&
		   c.path[0] == 0, "bare dump");
	ok(parse("dump /tmp/x") == 0 && strcmp(c.path, "/tmp/x") == 0,
	   "dump PATH");
	ok(parse("  dump --json /tmp/y \r") == 0 && c.json &&
		   strcmp(c.path, "/tmp/y") == 0, "dump --json PATH, spaces, CR");
	ok(parse("dump --json") == 0 && c.json && !c.path[0], "dump --json");
	ok(parse("reset") == 0 && c.kind == MW_CMD_RESET, "reset");
	ok(parse("stats") == 0 && c.kind == MW_CMD_STATS, "stats");
	ok(parse("detach") == 0 && c.kind == MW_CMD_DETACH, "detach");
	ok(parse("dump rel/path") == -EINVAL && strstr(err, "absolute"),
	   "relative dump path refused: %s", err);
	ok(parse("dump /a /b") == -EINVAL, "two paths refused");
	ok(parse("stats now") == -EINVAL && strstr(err, "now"),
	   "argument to stats refused: %s", err);
	ok(parse("frobnicate") == -EINVAL && strstr(err, "frobnicate"),
	   "unknown command named: %s", err);
	ok(parse("") == -EINVAL && parse("   ") == -EINVAL, "empty lines");
	ok(mw_cmd_parse("stats\0x", 7, &c, err, sizeof(err)) == -EINVAL &&
		   strstr(err, "NUL"), "NUL byte refused");
	ok(parse("\x01\x02\xff") == -EINVAL && !strchr(err, '\x01'),
	   "control bytes not echoed: %s", err);
	memset(big, 'a', sizeof(big) - 1);
	ok(parse(big) == -EINVAL && strstr(err, "too long"), "long line");
	ok(parse("a b c d e f g") == -EINVAL, "too many words");
	ok(parse("dump --json --scan --top 10 /tmp/z") == 0 && c.json &&
		   c.scan && c.top == 10 && strcmp(c.path, "/tmp/z") == 0,
	   "dump --json --scan --top 10 PATH");
	ok(parse("dump --top 3") == 0 && c.top == 3 && !c.path[0],
	   "dump --top N without a path");
	ok(parse("dump --top 0") == -EINVAL && parse("dump --top x") ==
		   -EINVAL && parse("dump --top 12345678901") == -EINVAL,
	   "bad --top counts refused: %s", err);
	ok(parse("dump --top") == -EINVAL, "--top without a count");
	ok(parse("dump --frob /x") == -EINVAL && strstr(err, "--frob"),
	   "unknown dump option named: %s", err);
	ok(parse("objects /tmp/o.json") == 0 && c.kind == MW_CMD_OBJECTS &&
		   strcmp(c.path, "/tmp/o.json") == 0 && !c.heap_path[0],
	   "objects PATH");
	ok(parse("objects --dump-all /tmp/h /tmp/o") == 0 &&
		   strcmp(c.heap_path, "/tmp/h") == 0 &&
		   strcmp(c.path, "/tmp/o") == 0, "objects --dump-all H PATH");
	ok(parse("objects") == -EINVAL && strstr(err, "usage"),
	   "objects without a path: %s", err);
	ok(parse("objects a/rel") == -EINVAL && parse("objects /a /b") ==
		   -EINVAL && parse("objects --dump-all a/rel /a") == -EINVAL &&
		   parse("objects ..") == -EINVAL && parse("dump .") == -EINVAL,
	   "objects: relative or extra paths refused");
	ok(parse("objects o.json") == 0 && strcmp(c.path, "o.json") == 0,
	   "objects NAME: a file in the runtime directory");
	ok(parse("detach --discard") == 0 && c.kind == MW_CMD_DETACH &&
		   c.discard, "detach --discard");
	ok(parse("detach --x") == -EINVAL, "detach --x refused");
	ok(parse("lease") == 0 && c.kind == MW_CMD_LEASE && c.owner == 0,
	   "lease");
	ok(parse("lease 4242") == 0 && c.kind == MW_CMD_LEASE &&
		   c.owner == 4242, "lease PID: the owner");
	ok(parse("lease 0") == -EINVAL && parse("lease 12x") == -EINVAL &&
		   parse("lease 99999999") == -EINVAL &&
		   parse("lease 1 2") == -EINVAL, "lease: a bad PID refused");
	ok(parse("gc") == 0 && c.kind == MW_CMD_GC, "gc");
	ok(parse("gc now") == -EINVAL && strstr(err, "now"),
	   "argument to gc refused: %s", err);
	return tap_done();
}
