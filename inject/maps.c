/* maps.c - see maps.h */
#define _GNU_SOURCE
#include "maps.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int is_libc(const char *base)
{
	return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0;
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
	char perms[8], dev[32];
	char path[PATH_MAX];	/* "" for an anonymous mapping */
};

/* Calls @fn on each line of process @pid's maps until it returns
 * non-zero.  0, or -errno when the file cannot be read. */
static int each_line(pid_t pid, int (*fn)(const struct maps_line *, void *),
		     void *arg)
{
	char path[64], buf[PATH_MAX + 256];
	struct maps_line l;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		l.path[0] = '\0';
		if (sscanf(buf, "%lx-%lx %7s %lx %31s %lu %4095[^\n]", &l.lo,
			   &l.hi, l.perms, &l.off, l.dev, &l.ino, l.path) < 6)
			continue;
		if (fn(&l, arg))
			break;
	}
	fclose(f);
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
	char dev[32];
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
		snprintf(c->dev, sizeof(c->dev), "%s", l->dev);
		if (c->path)
			snprintf(c->path, c->len, "%s", l->path);
	}
	if (l->perms[2] == 'x' && c->base && l->ino == c->ino && !c->lo_x) {
		c->lo_x = l->lo;
		c->hi_x = l->hi;
	}
	return 0;
}

/* Where libc is mapped in process @pid; @c->path, if set, gets its
 * path.  0 or -ENOENT (or -errno). */
static int find_libc(pid_t pid, struct libc_map *c)
{
	int ret = each_line(pid, libc_line, c);

	return ret ? ret : c->base ? 0 : -ENOENT;
}

/* Routines that keep no lock and no state of their own: they read and
 * write only the memory they are given, never call malloc, stdio or the
 * loader, and call nothing else: x86-64 glibc writes them as leaves in
 * assembly that never move rsp (checked on Debian 12's glibc 2.36 for
 * the AVX-512/EVEX variants picked here: no push, call or rsp operand
 * in them or in the code they jump to; the _chk ones may jump to
 * __chk_fail, which aborts anyway).  A thread inside one, called from
 * application code, is at a safe point: our calls can run on it and it
 * resumes mid-copy.  This is what makes a thread that lives in memcpy
 * (copying big strings) attachable without waiting for it to leave
 * libc.  Anything else in libc may hold a lock or half-updated state
 * (the malloc family, stdio, the loader, locale, atexit, ...). */
static const char *const leaf_names[] = {
	"memcpy", "memmove", "mempcpy", "memset", "memcmp", "bcmp",
	"memchr", "memrchr", "rawmemchr", "strlen", "strnlen", "strchr",
	"strchrnul", "strrchr", "strcmp", "strncmp", "strcpy", "stpcpy",
	"strncpy", "stpncpy", "strcat", "strncat", "wmemset", "wmemcmp",
	"wmemchr", "wcslen", "wcsnlen", "wcschr", "wcsrchr", "wcscmp",
	"wcsncmp", "wcscpy", "__memcpy_chk", "__memmove_chk",
	"__mempcpy_chk", "__memset_chk", "__wmemset_chk",
};

/* The targets's entries of leaf_names.  Most are ifuncs: libc picks one
 * implementation per CPU at load time, and the picked one is a local
 * symbol, absent from the dynamic symbol table.  Our own process runs
 * on the same CPU: when the target's libc is the very file ours is,
 * dlsym's answer here, moved by the difference of the load bases, is
 * the target's.  Otherwise (a container's libc, another GLIBC_TUNABLES
 * choice) no entry matches and libc stays unsafe as a whole. */
static void find_leaves(pid_t pid, struct mwi_maps *m)
{
	struct libc_map its = { 0 }, ours = { 0 };
	size_t i;

	if (find_libc(pid, &its) || find_libc(getpid(), &ours) ||
	    its.ino != ours.ino || strcmp(its.dev, ours.dev))
		return;
	for (i = 0; i < sizeof(leaf_names) / sizeof(leaf_names[0]) &&
		    m->nleaf < MWI_MAX_LEAF; i++) {
		uintptr_t at = (uintptr_t)dlsym(RTLD_DEFAULT, leaf_names[i]);

		/* ours if in our libc's code (not an interposer's) */
		if (at >= ours.lo_x && at < ours.hi_x)
			m->leaf[m->nleaf++] = at - ours.base + its.base;
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
	int ret;

	memset(m, 0, sizeof(*m));
	ret = find_libc(pid, &c);
	if (ret)
		return ret;
	m->libc_base = c.base;
	m->libc_lo = c.lo_x;
	m->libc_hi = c.hi_x;
	m->libc_ino = c.ino;
	ret = each_line(pid, unsafe_line, m);
	if (ret)
		return ret;
	find_leaves(pid, m);
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
	int ret = each_line(pid, file_line, &q);

	if (ret)
		return ret;
	if (!q.found)
		return -ENOENT;
	*base = q.base;
	*ino = q.ino;
	return 0;
}
