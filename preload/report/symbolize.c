/* SPDX-License-Identifier: MIT */
/* symbolize.c - see symbolize.h */
#define _GNU_SOURCE
#include "report/symbolize.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

/* A bounded string builder over a caller's buffer. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_mem(struct sbuf *b, const char *s, size_t n)
{
	while (n-- && b->len + 1 < b->cap)
		b->p[b->len++] = *s++;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_mem(b, s, strlen(s));
}

static void sb_hex(struct sbuf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int n = 0;

	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	sb_str(b, "0x");
	while (n--)
		sb_mem(b, &tmp[n], 1);
}

/* The main program's link map has an empty name.  @path is filled on
 * first use by whichever reader comes first; two at once write the same
 * bytes. */
static const char *exe_path(void)
{
	static char path[512];

	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		if (n <= 0)
			memcpy(path, "?", 2);
		else
			path[n] = '\0';
	}
	return path;
}

size_t mw_site_name(const struct mw_site *s, char *buf, size_t len)
{
	struct sbuf b = { buf, 0, len };
	Dl_info info;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (s->key) {
		sb_str(&b, s->key);
		return b.len;
	}
	if (dladdr((void *)s->addr, &info) && info.dli_fname) {
		sb_str(&b, info.dli_fname[0] ? info.dli_fname : exe_path());
		sb_str(&b, "(");
		if (info.dli_sname && info.dli_saddr) {
			sb_str(&b, info.dli_sname);
			sb_str(&b, "+");
			sb_hex(&b, s->addr - (uintptr_t)info.dli_saddr);
		} else {
			sb_str(&b, "+");
			sb_hex(&b, s->addr - (uintptr_t)info.dli_fbase);
		}
		sb_str(&b, ")");
	}
	sb_str(&b, "[");
	sb_hex(&b, s->addr);
	sb_str(&b, "]");
	return b.len;
}
