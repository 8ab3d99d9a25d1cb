/* control.c - see control.h */
#include "control.h"

#include <errno.h>
#include <string.h>

static void set_err(char *err, size_t errlen, const char *a,
		    const char *b, size_t blen)
{
	size_t n = 0;

	if (!errlen)
		return;
	while (*a && n + 1 < errlen)
		err[n++] = *a++;
	if (blen > 60)
		blen = 60;
	while (blen-- && n + 1 < errlen) {
		char c = *b++;

		/* keep the answer one printable line */
		err[n++] = (c >= 0x20 && c < 0x7f) ? c : '?';
	}
	err[n] = '\0';
}

static int word_is(const char *w, size_t n, const char *name)
{
	return strlen(name) == n && memcmp(w, name, n) == 0;
}

int mw_cmd_parse(const char *line, size_t len, struct mw_cmd *cmd,
		 char *err, size_t errlen)
{
	const char *words[4];
	size_t lens[4];
	size_t i = 0, nw = 0;

	memset(cmd, 0, sizeof(*cmd));
	if (errlen)
		err[0] = '\0';
	if (memchr(line, '\0', len)) {
		set_err(err, errlen, "NUL byte in command", "", 0);
		return -EINVAL;
	}
	if (len >= MW_CMD_LINE_MAX) {
		set_err(err, errlen, "command line too long", "", 0);
		return -EINVAL;
	}
	while (i < len) {
		size_t start;

		while (i < len && (line[i] == ' ' || line[i] == '\t' ||
				   line[i] == '\r'))
			i++;
		if (i == len)
			break;
		if (nw == 4) {
			set_err(err, errlen, "too many words: ", line, len);
			return -EINVAL;
		}
		start = i;
		while (i < len && line[i] != ' ' && line[i] != '\t' &&
		       line[i] != '\r')
			i++;
		words[nw] = line + start;
		lens[nw++] = i - start;
	}
	if (nw == 0) {
		set_err(err, errlen, "empty command", "", 0);
		return -EINVAL;
	}
	if (word_is(words[0], lens[0], "dump")) {
		size_t w = 1;

		cmd->kind = MW_CMD_DUMP;
		if (w < nw && word_is(words[w], lens[w], "--json")) {
			cmd->json = 1;
			w++;
		}
		if (w < nw) {
			if (words[w][0] != '/' || lens[w] >= sizeof(cmd->path)) {
				set_err(err, errlen,
					"dump wants an absolute path: ",
					words[w], lens[w]);
				return -EINVAL;
			}
			memcpy(cmd->path, words[w], lens[w]);
			cmd->path[lens[w]] = '\0';
			w++;
		}
		if (w < nw) {
			set_err(err, errlen, "unexpected argument: ", words[w],
				lens[w]);
			return -EINVAL;
		}
		return 0;
	}
	if (nw > 1) {
		set_err(err, errlen, "unexpected argument: ", words[1],
			lens[1]);
		return -EINVAL;
	}
	if (word_is(words[0], lens[0], "reset"))
		cmd->kind = MW_CMD_RESET;
	else if (word_is(words[0], lens[0], "stats"))
		cmd->kind = MW_CMD_STATS;
	else if (word_is(words[0], lens[0], "detach"))
		cmd->kind = MW_CMD_DETACH;
	else {
		set_err(err, errlen, "unknown command: ", words[0], lens[0]);
		return -EINVAL;
	}
	return 0;
}
