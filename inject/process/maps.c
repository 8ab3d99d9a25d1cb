/* SPDX-License-Identifier: MIT */
/* maps.c - see maps.h */
#define _GNU_SOURCE
#include "process/maps.h"
#include "base/leaves.h"
#include "common/procmaps.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* glibc's libc.so.6 (libc-2.31.so before 2.34), or musl's, which is its
 * loader: ld-musl-ARCH.so.1 (Alpine's libc.musl-ARCH.so.1 links to it;
 * maps names the file itself). */
static int is_libc(const char *base)
{
	return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0 ||
	       mw_libc_musl_path(base);
}

int mwi_maps_libc_is_musl(const char *path)
{
	return mw_libc_musl_path(path);
}

static int is_unsafe_object(const char *base)
{
	return is_libc(base) || strncmp(base, "ld-linux", 8) == 0 ||
	       strncmp(base, "ld-", 3) == 0 ||
	       strncmp(base, "libmwrap", 8) == 0 ||
	       strncmp(base, "liburcu", 7) == 0;
}

/* One line of /proc/PID/maps. */
struct maps_line {
	unsigned long lo, hi, off, ino;
	unsigned int dev_major, dev_minor;
	char perms[5];
	char path[PATH_MAX];	/* "" for an anonymous mapping */
};

/* Whole passes over the file before settling for their union. */
#define MAPS_PASSES 8

/* /proc/PID/maps, read as one view.  The kernel hands the file out at
 * most a page per read(), looking at the memory map afresh each time:
 * in a process that maps and unmaps memory all the time (a 28 KB file
 * takes 7 reads) the map changes between the reads that make up one
 * pass, which is then no picture of any one moment.  So whole passes
 * are repeated until one repeats the pass before it byte for byte; if
 * MAPS_PASSES never do, the view is the union of their lines: a line
 * present in any pass is in it, the safe side for every caller (a
 * lookup finds what was mapped in any pass, the unsafe ranges get every
 * executable range seen).  Either way the lines are served in address
 * order, duplicates once. */
struct maps_view {
	char *text[MAPS_PASSES];
	size_t len[MAPS_PASSES];
	int npass;
	int agreed;	/* text[npass - 1] repeated text[npass - 2] */
};

static void view_free(struct maps_view *v)
{
	while (v->npass > 0)
		free(v->text[--v->npass]);
}

/* One pass over @fd from its start, into a new NUL-terminated buffer of
 * at least @hint bytes.  0, or -errno (nothing allocated then). */
static int read_pass(int fd, size_t hint, char **text, size_t *len)
{
	size_t cap = hint < 16384 ? 16384 : hint, n = 0;
	char *buf = malloc(cap), *grown;
	ssize_t got;
	int err;

	if (!buf)
		return -ENOMEM;
	if (lseek(fd, 0, SEEK_SET) < 0)
		goto fail;
	for (;;) {
		if (n + 1 == cap) {
			grown = realloc(buf, cap * 2);
			if (!grown) {
				errno = ENOMEM;
				goto fail;
			}
			buf = grown;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto fail;
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
fail:
	err = errno;
	free(buf);
	return -err;
}

/* Reads process @pid's maps into @v (see struct maps_view).  0, or
 * -errno with nothing held.  A process that exits meanwhile reads as
 * empty (or fails with -ESRCH). */
static int view_read(pid_t pid, struct maps_view *v)
{
	char path[64];
	int fd, ret = 0, i;

	memset(v, 0, sizeof(*v));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (!v->agreed && v->npass < MAPS_PASSES) {
		i = v->npass;
		ret = read_pass(fd, i ? v->len[i - 1] + 4096 : 0, &v->text[i],
				&v->len[i]);
		if (ret)
			break;
		v->npass++;
		v->agreed = i > 0 && v->len[i] == v->len[i - 1] &&
			    !memcmp(v->text[i], v->text[i - 1], v->len[i]);
	}
	close(fd);
	if (ret)
		view_free(v);
	return ret;
}

/* A line of a pass: where it starts, its length without the newline,
 * and the address it begins with (the sort key). */
struct line_ref {
	unsigned long lo;
	const char *s;
	size_t n;
};

static int line_cmp(const void *a, const void *b)
{
	const struct line_ref *x = a, *y = b;
	int c;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	c = memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
	return c ? c : x->n < y->n ? -1 : x->n > y->n;
}

/* Appends the lines of @text to @refs (NULL: only counts them).  Their
 * number. */
static size_t split_lines(const char *text, size_t len, struct line_ref *refs)
{
	const char *p = text, *end = text + len, *nl;
	size_t n = 0;

	for (; p < end; p = nl + 1, n++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (refs) {
			refs[n].s = p;
			refs[n].n = (size_t)(nl - p);
			refs[n].lo = strtoul(p, NULL, 16);
		}
	}
	return n;
}

/* Parses one line (@n bytes at @s, no newline) into @l.  0, or -EINVAL
 * for a line that is not one of maps. */
static int parse_line(const char *s, size_t n, struct maps_line *l)
{
	struct mw_maps_entry e;
	size_t len;

	if (mw_maps_parse(s, n, &e))
		return -EINVAL;
	l->lo = e.lo;
	l->hi = e.hi;
	l->off = e.off;
	l->ino = e.ino;
	l->dev_major = e.dev_major;
	l->dev_minor = e.dev_minor;
	memcpy(l->perms, e.perms, sizeof(l->perms));
	len = e.pathlen < sizeof(l->path) ? e.pathlen : sizeof(l->path) - 1;
	memcpy(l->path, e.path, len);
	l->path[len] = '\0';
	return 0;
}

/* Calls @fn on each line of @v (the agreed pass, or the union of all),
 * in address order, until it returns non-zero.  0, or -ENOMEM. */
static int each_line(const struct maps_view *v,
		     int (*fn)(const struct maps_line *, void *), void *arg)
{
	int first = v->agreed ? v->npass - 1 : 0, i;
	struct line_ref *refs;
	struct maps_line l;
	size_t n = 0, k;

	for (i = first; i < v->npass; i++)
		n += split_lines(v->text[i], v->len[i], NULL);
	refs = malloc((n ? n : 1) * sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	for (n = 0, i = first; i < v->npass; i++)
		n += split_lines(v->text[i], v->len[i], refs + n);
	qsort(refs, n, sizeof(*refs), line_cmp);
	for (k = 0; k < n; k++) {
		if (k && !line_cmp(&refs[k - 1], &refs[k]))
			continue;
		if (!parse_line(refs[k].s, refs[k].n, &l) && fn(&l, arg))
			break;
	}
	free(refs);
	return 0;
}

/* The name of a mapped file (after its last '/'), or NULL. */
static const char *file_name(const struct maps_line *l)
{
	return l->path[0] == '/' ? strrchr(l->path, '/') + 1 : NULL;
}

struct libc_map {
	uintptr_t base, lo_x, hi_x;	/* load base, executable range */
	unsigned long ino;
	unsigned int dev_major, dev_minor;
	char *path;			/* as maps shows it, or NULL */
	size_t len;
};

static int libc_line(const struct maps_line *l, void *arg)
{
	struct libc_map *c = arg;
	const char *name = file_name(l);

	if (!name || strstr(l->path, " (deleted)") || !is_libc(name))
		return 0;
	if (l->off == 0 && !c->base) {
		c->base = l->lo;
		c->ino = l->ino;
		c->dev_major = l->dev_major;
		c->dev_minor = l->dev_minor;
		if (c->path)
			snprintf(c->path, c->len, "%s", l->path);
	}
	if (l->perms[2] == 'x' && c->base && l->ino == c->ino && !c->lo_x) {
		c->lo_x = l->lo;
		c->hi_x = l->hi;
	}
	return 0;
}

/* Where libc is mapped in @v; @c->path, if set, gets its path.  0,
 * -ENOENT or -ENOMEM. */
static int find_libc(const struct maps_view *v, struct libc_map *c)
{
	int ret = each_line(v, libc_line, c);

	return ret ? ret : c->base ? 0 : -ENOENT;
}

/* The target's entries of mwi_leaf_names (leaves_ARCH.c).  Most are ifuncs:
 * libc picks one implementation per CPU at load time, and the picked one
 * is a local symbol, absent from the dynamic symbol table.  Our own
 * process runs on the same CPU: when the target's libc is the very file
 * ours is, dlsym's answer here, moved by the difference of the load
 * bases, is the target's.  Otherwise (a container's libc, another
 * GLIBC_TUNABLES choice) no entry matches and libc stays unsafe as a
 * whole.  Each is kept with the span of code it may run, if it is a
 * leaf (mwi_leaf_span: on aarch64 its code is walked). */
static void find_leaves(const struct libc_map *its, struct mwi_maps *m)
{
	struct libc_map ours = { 0 };
	struct maps_view v;
	size_t i;
	int ret;

	if (view_read(getpid(), &v))
		return;
	ret = find_libc(&v, &ours);
	view_free(&v);
	if (ret || its->ino != ours.ino || its->dev_major != ours.dev_major ||
	    its->dev_minor != ours.dev_minor)
		return;
	for (i = 0; i < mwi_leaf_count && m->nleaf < MWI_MAX_LEAF; i++) {
		uintptr_t at = (uintptr_t)dlsym(RTLD_DEFAULT, mwi_leaf_names[i]);
		uintptr_t lo, hi;

		/* ours if in our libc's code (not an interposer's) */
		if (at < ours.lo_x || at >= ours.hi_x)
			continue;
		if (mwi_leaf_span(at, ours.lo_x, ours.hi_x, &lo, &hi))
			continue;
		m->leaf[m->nleaf] = at - ours.base + its->base;
		m->leaf_lo[m->nleaf] = lo - ours.base + its->base;
		m->leaf_hi[m->nleaf++] = hi - ours.base + its->base;
	}
}

static int unsafe_line(const struct maps_line *l, void *arg)
{
	struct mwi_maps *m = arg;
	const char *name = file_name(l);

	if (name && l->perms[2] == 'x' && is_unsafe_object(name) &&
	    m->nunsafe < MWI_MAX_RANGES) {
		m->unsafe_lo[m->nunsafe] = l->lo;
		m->unsafe_hi[m->nunsafe++] = l->hi;
	}
	return 0;
}

int mwi_maps_read(pid_t pid, struct mwi_maps *m)
{
	struct libc_map c = { .path = m->libc_path,
			      .len = sizeof(m->libc_path) };
	struct maps_view v;
	int ret;

	memset(m, 0, sizeof(*m));
	/* one view for libc and the unsafe ranges: the same moment */
	ret = view_read(pid, &v);
	if (ret)
		return ret;
	ret = find_libc(&v, &c);
	if (!ret) {
		m->libc_base = c.base;
		m->libc_lo = c.lo_x;
		m->libc_hi = c.hi_x;
		m->libc_ino = c.ino;
		ret = each_line(&v, unsafe_line, m);
	}
	view_free(&v);
	if (ret)
		return ret;
	find_leaves(&c, m);
	return 0;
}

int mwi_maps_leaf(const struct mwi_maps *m, uintptr_t pc)
{
	int i;

	for (i = 0; i < m->nleaf; i++)
		if (pc == m->leaf[i])
			return 1;
	return 0;
}

int mwi_maps_in_leaf(const struct mwi_maps *m, uintptr_t entry, uintptr_t pc)
{
	int i;

	for (i = 0; i < m->nleaf; i++)
		if (entry == m->leaf[i])
			return pc >= m->leaf_lo[i] && pc < m->leaf_hi[i];
	return 0;
}

int mwi_maps_unsafe(const struct mwi_maps *m, uintptr_t pc)
{
	int i;

	for (i = 0; i < m->nunsafe; i++)
		if (pc >= m->unsafe_lo[i] && pc < m->unsafe_hi[i])
			return 1;
	return 0;
}

struct file_query {
	const char *file;
	uintptr_t base;
	unsigned long ino;
	char *shown;
	size_t len;
	int found;
};

static int file_line(const struct maps_line *l, void *arg)
{
	struct file_query *q = arg;
	size_t flen = strlen(q->file), nlen = strlen(l->path);

	if (l->off != 0 || nlen < flen ||
	    strcmp(l->path + nlen - flen, q->file) ||
	    (nlen > flen && q->file[0] != '/'))
		return 0;
	q->base = l->lo;
	q->ino = l->ino;
	snprintf(q->shown, q->len, "%s", l->path);
	return q->found = 1;
}

int mwi_maps_find(pid_t pid, const char *file, uintptr_t *base,
		  unsigned long *ino, char *shown, size_t len)
{
	struct file_query q = { file, 0, 0, shown, len, 0 };
	struct maps_view v;
	int ret = view_read(pid, &v);

	if (ret)
		return ret;
	ret = each_line(&v, file_line, &q);
	view_free(&v);
	if (ret)
		return ret;
	if (!q.found)
		return -ENOENT;
	*base = q.base;
	*ino = q.ino;
	return 0;
}

int mwi_proc_gone(pid_t pid)
{
	char path[64], buf[256];
	const char *state;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* "PID (comm) S ...": the state follows the last ')' */
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && (state[2] == 'Z' || state[2] == 'X');
}

int mwi_maps_local_file(pid_t pid, const char *shown, unsigned long ino,
			char *path, size_t len)
{
	struct stat st;
	const char *tail;

	snprintf(path, len, "/proc/%d/root%s", (int)pid, shown);
	if (stat(path, &st) == 0 && st.st_ino == ino)
		return 0;
	snprintf(path, len, "%s", shown);
	if (stat(path, &st) == 0 && st.st_ino == ino)
		return 0;
	/* chrooted in a namespace of its own: each shorter tail */
	for (tail = strchr(shown + 1, '/'); tail; tail = strchr(tail + 1, '/')) {
		snprintf(path, len, "/proc/%d/root%s", (int)pid, tail);
		if (stat(path, &st) == 0 && st.st_ino == ino)
			return 0;
	}
	return -ENOENT;
}
