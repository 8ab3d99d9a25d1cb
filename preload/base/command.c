/* SPDX-License-Identifier: MIT */
/* command.c - see command.h */
#include "base/command.h"

#include <errno.h>
#include <string.h>

#define MAX_WORDS 6

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

/* A plain name (no '/', not "." or ".."): a file in the runtime
 * directory. */
static int plain_name(const char *w, size_t n)
{
	if (memchr(w, '/', n) || n > 255)
		return 0;
	return !(n == 1 && w[0] == '.') && !(n == 2 && w[0] == '.' &&
					      w[1] == '.');
}

/* Copies a path word (absolute, or a plain name) into @dst (PATH_MAX
 * bytes); @refusal starts the error message. */
static int take_path(const char *w, size_t n, char *dst,
		     const char *refusal, char *err, size_t errlen)
{
	if ((w[0] != '/' && !plain_name(w, n)) || n >= PATH_MAX) {
		set_err(err, errlen, refusal, w, n);
		return -EINVAL;
	}
	memcpy(dst, w, n);
	dst[n] = '\0';
	return 0;
}

/* A number 1 .. @max of at most 8 digits (--top's count, lease's
 * process id); -EINVAL with @what and the word in @err otherwise. */
static int take_number(const char *w, size_t n, uint32_t max, uint32_t *out,
		       const char *what, char *err, size_t errlen)
{
	uint32_t v = 0;
	size_t i;

	for (i = 0; i < n && i < 8 && w[i] >= '0' && w[i] <= '9'; i++)
		v = v * 10 + (uint32_t)(w[i] - '0');
	if (i != n || v == 0 || v > max) {
		set_err(err, errlen, what, w, n);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* dump [--json] [--scan] [--top N] [PATH] */
static int parse_dump(const char **words, const size_t *lens, size_t nw,
		      struct mw_cmd *cmd, char *err, size_t errlen)
{
	size_t w = 1;

	cmd->kind = MW_CMD_DUMP;
	for (; w < nw && words[w][0] == '-'; w++) {
		if (word_is(words[w], lens[w], "--json")) {
			cmd->json = 1;
		} else if (word_is(words[w], lens[w], "--scan")) {
			cmd->scan = 1;
		} else if (word_is(words[w], lens[w], "--top") && w + 1 < nw) {
			w++;
			if (take_number(words[w], lens[w], 1000000, &cmd->top,
					"--top wants a count 1..1000000: ",
					err, errlen))
				return -EINVAL;
		} else {
			set_err(err, errlen, "unknown dump option: ", words[w],
				lens[w]);
			return -EINVAL;
		}
	}
	if (w < nw && take_path(words[w], lens[w], cmd->path,
				"dump wants an absolute path or a plain name: ", err, errlen))
		return -EINVAL;
	if (w < nw)
		w++;
	if (w < nw) {
		set_err(err, errlen, "unexpected argument: ", words[w],
			lens[w]);
		return -EINVAL;
	}
	return 0;
}

/* objects [--dump-all HEAP_PATH] PATH */
static int parse_objects(const char **words, const size_t *lens, size_t nw,
			 struct mw_cmd *cmd, char *err, size_t errlen)
{
	size_t w = 1;

	cmd->kind = MW_CMD_OBJECTS;
	if (w + 1 < nw && word_is(words[w], lens[w], "--dump-all")) {
		if (take_path(words[w + 1], lens[w + 1], cmd->heap_path,
			      "objects wants an absolute path or a plain name: ", err, errlen))
			return -EINVAL;
		w += 2;
	}
	if (w + 1 != nw) {
		set_err(err, errlen,
			"usage: objects [--dump-all HEAP_PATH] PATH", "", 0);
		return -EINVAL;
	}
	return take_path(words[w], lens[w], cmd->path,
			 "objects wants an absolute path or a plain name: ", err, errlen);
}

int mw_cmd_parse(const char *line, size_t len, struct mw_cmd *cmd,
		 char *err, size_t errlen)
{
	const char *words[MAX_WORDS];
	size_t lens[MAX_WORDS];
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
		if (nw == MAX_WORDS) {
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
	if (word_is(words[0], lens[0], "dump"))
		return parse_dump(words, lens, nw, cmd, err, errlen);
	if (word_is(words[0], lens[0], "objects"))
		return parse_objects(words, lens, nw, cmd, err, errlen);
	if (nw == 2 && word_is(words[0], lens[0], "detach") &&
	    word_is(words[1], lens[1], "--discard")) {
		cmd->kind = MW_CMD_DETACH;
		cmd->discard = 1;
		return 0;
	}
	if (nw == 2 && word_is(words[0], lens[0], "lease")) {
		cmd->kind = MW_CMD_LEASE;
		/* a pid: pid_max is at most 2^22 */
		return take_number(words[1], lens[1], 1u << 22, &cmd->owner,
				   "lease wants a process id: ", err, errlen);
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
	else if (word_is(words[0], lens[0], "lease"))
		cmd->kind = MW_CMD_LEASE;
	else if (word_is(words[0], lens[0], "gc"))
		cmd->kind = MW_CMD_GC;
	else {
		set_err(err, errlen, "unknown command: ", words[0], lens[0]);
		return -EINVAL;
	}
	return 0;
}
