/* SPDX-License-Identifier: MIT */
/* fmt.c - see fmt.h */
#include "base/fmt.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void mw_out_init(struct mw_out *o, int fd)
{
	o->fd = fd;
	o->err = 0;
	o->len = 0;
}

int mw_out_flush(struct mw_out *o)
{
	size_t off = 0;

	while (off < o->len && !o->err) {
		ssize_t n = write(o->fd, o->buf + off, o->len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			o->err = errno;
		} else {
			off += (size_t)n;
		}
	}
	o->len = 0;
	return -o->err;
}

void mw_out_mem(struct mw_out *o, const char *s, size_t n)
{
	while (n) {
		size_t room = sizeof(o->buf) - o->len;
		size_t k = n < room ? n : room;

		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (o->len == sizeof(o->buf))
			mw_out_flush(o);
	}
}

void mw_out_str(struct mw_out *o, const char *s)
{
	mw_out_mem(o, s, strlen(s));
}

void mw_out_chr(struct mw_out *o, char c)
{
	mw_out_mem(o, &c, 1);
}

size_t mw_fmt_u64(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

void mw_out_u64(struct mw_out *o, uint64_t v, int width)
{
	char buf[24];
	size_t n = mw_fmt_u64(buf, v);

	while (width > (int)n) {
		mw_out_chr(o, ' ');
		width--;
	}
	mw_out_mem(o, buf, n);
}

void mw_out_i64(struct mw_out *o, int64_t v)
{
	if (v < 0) {
		mw_out_chr(o, '-');
		mw_out_u64(o, (uint64_t)0 - (uint64_t)v, 0);
	} else {
		mw_out_u64(o, (uint64_t)v, 0);
	}
}

void mw_out_fixed3(struct mw_out *o, double v)
{
	uint64_t milli;

	if (!(v < 9.2e18)) {
		mw_out_str(o, "Infinity");
		return;
	}
	if (v < 0)
		v = 0;
	milli = (uint64_t)(v * 1000 + 0.5);
	mw_out_u64(o, milli / 1000, 0);
	mw_out_chr(o, '.');
	mw_out_chr(o, (char)('0' + milli / 100 % 10));
	mw_out_chr(o, (char)('0' + milli / 10 % 10));
	mw_out_chr(o, (char)('0' + milli % 10));
}

void mw_out_hex(struct mw_out *o, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char buf[18];
	int n = 0, i;

	do {
		buf[n++] = digits[v & 15];
		v >>= 4;
	} while (v);
	mw_out_mem(o, "0x", 2);
	for (i = n - 1; i >= 0; i--)
		mw_out_chr(o, buf[i]);
}

void mw_out_json_str(struct mw_out *o, const char *s)
{
	mw_out_json_strn(o, s, strlen(s));
}

void mw_out_json_strn(struct mw_out *o, const char *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	const char *end = s + n, *run = s;

	mw_out_chr(o, '"');
	for (; s < end; s++) {
		unsigned char c = (unsigned char)*s;

		if (c != '"' && c != '\\' && c >= 0x20 && c != 0x7f)
			continue;
		mw_out_mem(o, run, (size_t)(s - run));	/* the plain bytes */
		run = s + 1;
		if (c == '"' || c == '\\') {
			char esc[2] = { '\\', (char)c };

			mw_out_mem(o, esc, sizeof(esc));
		} else {
			char esc[6] = { '\\', 'u', '0', '0',
					digits[c >> 4], digits[c & 15] };

			mw_out_mem(o, esc, sizeof(esc));
		}
	}
	mw_out_mem(o, run, (size_t)(end - run));
	mw_out_chr(o, '"');
}

void mw_out_json_u64(struct mw_out *o, const char *name, uint64_t v)
{
	mw_out_str(o, ",\"");
	mw_out_str(o, name);
	mw_out_str(o, "\":");
	mw_out_u64(o, v, 0);
}
