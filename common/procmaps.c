/* SPDX-License-Identifier: MIT */
/* procmaps.c - see procmaps.h */
#include "common/procmaps.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Reads a hexadecimal number at *@p, moving *@p past it; -1 if none. */
static int hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;

	*v = 0;
	for (; *p < end; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			*v = *v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v = *v * 16 + (uint64_t)(c - 'a' + 10);
		else
			break;
	}
	return *p > s ? 0 : -1;
}

static int dec(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;

	for (*v = 0; *p < end && **p >= '0' && **p <= '9'; (*p)++)
		*v = *v * 10 + (uint64_t)(**p - '0');
	return *p > s ? 0 : -1;
}

/* Expects @c at *@p and moves past it. */
static int sep(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

int mw_maps_parse(const char *s, size_t n, struct mw_maps_entry *e)
{
	const char *p = s, *end = s + n;
	uint64_t lo, hi, major, minor, ino;

	if (hex(&p, end, &lo) || sep(&p, end, '-') || hex(&p, end, &hi) ||
	    sep(&p, end, ' ') || end - p < 5 || p[4] != ' ')
		return -EINVAL;
	memcpy(e->perms, p, 4);
	e->perms[4] = '\0';
	p += 5;
	if (hex(&p, end, &e->off) || sep(&p, end, ' ') ||
	    hex(&p, end, &major) || sep(&p, end, ':') ||
	    hex(&p, end, &minor) || sep(&p, end, ' ') || dec(&p, end, &ino))
		return -EINVAL;
	if (p < end && *p != ' ')
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	e->lo = (uintptr_t)lo;
	e->hi = (uintptr_t)hi;
	e->dev_major = (unsigned int)major;
	e->dev_minor = (unsigned int)minor;
	e->ino = (unsigned long)ino;
	e->path = p;
	e->pathlen = (size_t)(end - p);
	return 0;
}

int mw_maps_each(int fd, char *buf, size_t cap,
		 int (*fn)(const struct mw_maps_entry *e, void *arg),
		 void *arg)
{
	size_t have = 0;
	int skip = 0;	/* inside a line longer than @buf */

	for (;;) {
		ssize_t got = read(fd, buf + have, cap - have);
		char *line = buf, *nl;
		struct mw_maps_entry e;
		int ret;

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return 0;	/* a last line without newline: none */
		have += (size_t)got;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			if (!skip && !mw_maps_parse(line, (size_t)(nl - line), &e) &&
			    (ret = fn(&e, arg)))
				return ret;
			skip = 0;
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == cap) {	/* a line longer than the buffer */
			have = 0;
			skip = 1;
		}
	}
}
