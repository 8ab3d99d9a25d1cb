/* SPDX-License-Identifier: MIT */
/* fmt.h - buffered output to a file descriptor without malloc or stdio.
 *
 * Used by every dump path (exit, SIGURG helper, control file, Ruby API),
 * which may run while other threads sit inside our malloc hooks.
 */
#ifndef MW_FMT_H
#define MW_FMT_H

#include <stddef.h>
#include <stdint.h>

struct mw_out {
	int fd;
	int err;		/* first write(2) errno, 0 if none */
	size_t len;
	char buf[4096];
};

/* Context: any thread, no allocation; not async-signal-safe only because
 * the struct is large for a signal stack. */
void mw_out_init(struct mw_out *o, int fd);
/* Context: as mw_out_init. */
void mw_out_mem(struct mw_out *o, const char *s, size_t n);
/* Context: as mw_out_init. */
void mw_out_str(struct mw_out *o, const char *s);
/* Context: as mw_out_init. */
void mw_out_chr(struct mw_out *o, char c);
/* Decimal, right-aligned in @width columns (0: no padding).
 * Context: as mw_out_init. */
void mw_out_u64(struct mw_out *o, uint64_t v, int width);
/* Context: as mw_out_init. */
void mw_out_i64(struct mw_out *o, int64_t v);
/* A non-negative double with 3 decimals ("1.500"), or "Infinity" above
 * 2^63.  Context: as mw_out_init. */
void mw_out_fixed3(struct mw_out *o, double v);
/* "0x" followed by lower-case hex digits.  Context: as mw_out_init. */
void mw_out_hex(struct mw_out *o, uint64_t v);
/* A JSON string literal, quotes included; bytes < 0x20, '"' and '\\'
 * escaped.  Context: as mw_out_init. */
void mw_out_json_str(struct mw_out *o, const char *s);
/* The same for the @n bytes at @s (which may hold NULs).  Context: as
 * mw_out_json_str. */
void mw_out_json_strn(struct mw_out *o, const char *s, size_t n);
/* ,"@name":@v -- one more member of a JSON object.
 * Context: as mw_out_init. */
void mw_out_json_u64(struct mw_out *o, const char *name, uint64_t v);
/* Writes what is buffered; returns 0 or -errno of the first failure.
 * Context: as mw_out_init (write(2) only). */
int mw_out_flush(struct mw_out *o);

/* Formats @v in decimal into @buf (at least 21 bytes); returns length.
 * Context: any; async-signal-safe. */
size_t mw_fmt_u64(char *buf, uint64_t v);

#endif
