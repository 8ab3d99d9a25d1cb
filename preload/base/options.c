/* SPDX-License-Identifier: MIT */
/* options.c - see options.h */
#include "base/options.h"

#include <errno.h>
#include <string.h>

void mw_options_default(struct mw_options *o)
{
	o->dump_path[0] = '\0';
	o->dump_fd = -1;
	o->dump_min = 0;
	o->dump_heap = 0;
	o->format = MW_FORMAT_TEXT;
	o->sample = 0;
	o->lease = 0;
	o->stacks = 0;
	o->stack_sample = 0;
	o->staged = 0;
}

int mw_options_want_dump(const struct mw_options *o)
{
	return o->dump_path[0] != '\0' || o->dump_fd > 0;
}

/* Appends @s to @err without overflowing it. */
static void err_add(char *err, size_t errlen, const char *s, size_t n)
{
	size_t len = strnlen(err, errlen);

	while (n-- && *s && len + 1 < errlen)
		err[len++] = *s++;
	if (len < errlen)
		err[len] = '\0';
}

static int fail(struct mw_options *o, char *err, size_t errlen,
		const char *what, const char *item, size_t itemlen)
{
	mw_options_default(o);
	if (errlen) {
		err[0] = '\0';
		err_add(err, errlen, what, strlen(what));
		err_add(err, errlen, " '", 2);
		err_add(err, errlen, item, itemlen > 80 ? 80 : itemlen);
		err_add(err, errlen, "'", 1);
	}
	return -EINVAL;
}

/* Strict decimal: digits only, no sign, no overflow. */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > 20)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int key_is(const char *k, size_t klen, const char *name)
{
	return strlen(name) == klen && memcmp(k, name, klen) == 0;
}

int mw_options_parse(const char *s, struct mw_options *o,
		     char *err, size_t errlen)
{
	mw_options_default(o);
	if (errlen)
		err[0] = '\0';
	if (!s)
		return 0;

	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *colon = memchr(s, ':', len);
		const char *val;
		size_t klen, vlen;
		uint64_t num;

		if (len == 0) {		/* tolerate ",," and a trailing "," */
			s += end ? 1 : 0;
			continue;
		}
		if (!colon)
			return fail(o, err, errlen,
				    "option without ':VALUE'", s, len);
		klen = (size_t)(colon - s);
		val = colon + 1;
		vlen = len - klen - 1;

		if (key_is(s, klen, "dump_path")) {
			if (vlen == 0 || vlen >= sizeof(o->dump_path))
				return fail(o, err, errlen,
					    "bad dump_path", s, len);
			memcpy(o->dump_path, val, vlen);
			o->dump_path[vlen] = '\0';
		} else if (key_is(s, klen, "dump_fd")) {
			if (parse_u64(val, vlen, &num) || num > INT_MAX)
				return fail(o, err, errlen,
					    "bad number in", s, len);
			o->dump_fd = (int)num;
		} else if (key_is(s, klen, "dump_min")) {
			if (parse_u64(val, vlen, &num))
				return fail(o, err, errlen,
					    "bad number in", s, len);
			o->dump_min = num;
		} else if (key_is(s, klen, "dump_heap")) {
			if (parse_u64(val, vlen, &num) || num > 7)
				return fail(o, err, errlen,
					    "bad mask (0-7) in", s, len);
			o->dump_heap = (unsigned)num;
		} else if (key_is(s, klen, "sample") ||
			   key_is(s, klen, "stack_sample")) {
			if (parse_u64(val, vlen, &num) || num > (1ull << 40))
				return fail(o, err, errlen,
					    "bad sample size (0 to 2^40 bytes) in",
					    s, len);
			*(klen == 6 ? &o->sample : &o->stack_sample) = num;
		} else if (key_is(s, klen, "stacks")) {
			if (parse_u64(val, vlen, &num) || num > MW_STACKS_MAX)
				return fail(o, err, errlen,
					    "bad stack depth (0 to 64 frames) in",
					    s, len);
			o->stacks = (unsigned)num;
		} else if (key_is(s, klen, "lease")) {
			if (parse_u64(val, vlen, &num) || num > 86400)
				return fail(o, err, errlen,
					    "bad lease (0 to 86400 seconds) in",
					    s, len);
			o->lease = (unsigned)num;
		} else if (key_is(s, klen, "staged")) {
			if (parse_u64(val, vlen, &num) || num > 1)
				return fail(o, err, errlen,
					    "staged must be 0 or 1:", s, len);
			o->staged = (int)num;
		} else if (key_is(s, klen, "dump_format")) {
			if (key_is(val, vlen, "text"))
				o->format = MW_FORMAT_TEXT;
			else if (key_is(val, vlen, "json"))
				o->format = MW_FORMAT_JSON;
			else
				return fail(o, err, errlen,
					    "dump_format must be text or json:",
					    s, len);
		} else {
			return fail(o, err, errlen, "unknown option", s, klen);
		}
		s += len + (end ? 1 : 0);
	}
	return 0;
}
