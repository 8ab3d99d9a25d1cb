/* Unit tests for the control-file command parser (preload/control.c). */
#include <errno.h>
#include <string.h>

#include "control.h"
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
	ok(parse("a b c d e") == -EINVAL, "too many words");
	return tap_done();
}
