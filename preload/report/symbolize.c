/* SPDX-License-Identifier: MIT */
/* symbolize.c - see symbolize.h */
#define _GNU_SOURCE
#include "report/symbolize.h"
#include "base/elfsyms.h"
#include "base/spin.h"
#include "core/jit.h"
#include "common/libc.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#define OBJECTS_MAX 512			/* objects with a site, cached */
#define PATHS_BYTES (64u << 10)		/* their paths */
#define TABLES_BYTES_MAX (256ull << 20)	/* their tables, in all */
#define PHDRS_MAX 64			/* checked against the file */

/* Where an object's names come from. */
enum source { SRC_DLADDR, SRC_DYNSYM, SRC_SYMTAB, SRC_DEBUG };

static const char *const source_names[] = {
	"dladdr", "dynsym", "symtab", "debug",
};

struct object {
	uintptr_t start, limit;		/* its mappings' extent */
	uintptr_t bias;			/* + a symbol's value: address */
	uint64_t offset;		/* file offset at start */
	const char *path;
	struct mw_elf_syms syms;	/* source != SRC_DLADDR */
	enum source source;
	int is_main;			/* the program (its link map: "") */
	uint32_t pass;			/* the last pass naming a site */
	uint32_t build_id_len;
	uint8_t build_id[MW_ELF_BUILD_ID_MAX];
};

/* The cache, all under sym_lock.  @adds and @subs are the loader's counts
 * of objects loaded and unloaded when it was last checked: when they move,
 * an object may have gone and another taken its addresses, so the objects
 * no longer loaded as they were are dropped. */
static int sym_lock;
static struct object objects[OBJECTS_MAX];
static unsigned nobjects, hint;
static char paths[PATHS_BYTES];
static size_t paths_used;
static uint64_t tables_bytes;
static unsigned long long adds, subs;
static uint32_t passes;

/* A bounded string builder over a caller's buffer. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_mem(struct sbuf *b, const char *s, size_t n)
{
	size_t room = b->cap - b->len - 1;	/* cap > len always */

	if (n > room)
		n = room;
	memcpy(b->p + b->len, s, n);
	b->len += n;
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

static uintptr_t page_mask(void)
{
	return ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
}

/* --- the loaded object of an address -------------------------------- */

/* What dl_iterate_phdr tells of the object holding @addr, copied out:
 * the object may be unloaded once the loader's lock is let go. */
struct found {
	uintptr_t addr;
	int hit;
	int is_main;			/* the program itself */
	struct object o;
	char path[512];			/* too long: "", never read */
	size_t pathlen;
	Elf64_Phdr phdr[PHDRS_MAX];
	size_t phnum;			/* 0: too many to check */
};

/* The build id among an object's notes as mapped: its length (0: none),
 * *@id pointing at it. */
static size_t mapped_build_id(const struct dl_phdr_info *info,
			      const uint8_t **id)
{
	size_t n = 0;
	int i;

	for (i = 0; i < info->dlpi_phnum && !n; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_NOTE)
			n = mw_elf_build_id((const void *)(info->dlpi_addr +
							   ph->p_vaddr),
					    ph->p_memsz, ph->p_align, id);
	}
	return n;
}

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct found *f = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	const uint8_t *id = NULL;
	uint64_t off = 0;
	int in = 0, i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (f->addr >= a && f->addr - a < ph->p_memsz)
			in = 1;
		if (a < lo) {
			lo = a;
			off = ph->p_offset;
		}
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (!in)
		return 0;
	f->hit = 1;
	f->o.start = lo & page_mask();
	f->o.limit = (hi + ~page_mask()) & page_mask();
	f->o.offset = off & page_mask();
	f->o.bias = info->dlpi_addr;
	f->is_main = mw_dl_is_main(info);
	f->o.is_main = f->is_main;
	f->pathlen = strlen(f->is_main ? exe_path() : info->dlpi_name);
	memcpy(f->path, f->is_main ? exe_path() : info->dlpi_name,
	       f->pathlen < sizeof(f->path) ? f->pathlen + 1 : 0);
	if (f->pathlen >= sizeof(f->path))
		f->path[0] = '\0';
	f->phnum = info->dlpi_phnum <= PHDRS_MAX ? info->dlpi_phnum : 0;
	memcpy(f->phdr, info->dlpi_phdr, f->phnum * sizeof(f->phdr[0]));
	f->o.build_id_len = (uint32_t)mapped_build_id(info, &id);
	if (f->o.build_id_len)
		memcpy(f->o.build_id, id, f->o.build_id_len);
	return 1;
}

static int loader_counts(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) +
		    sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

/* --- the cache (sym_lock held) -------------------------------------- */

static void drop_all_locked(void)
{
	unsigned i, n = nobjects;

	nobjects = 0;	/* first: a child forked meanwhile sees none */
	hint = 0;
	for (i = 0; i < n; i++)
		mw_elf_syms_free(&objects[i].syms);
	paths_used = 0;
	tables_bytes = 0;
}

/* Marks in @arg's flags the cached objects still loaded as they were:
 * same link map name, load bias and build id. */
static int mark_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned char *alive = arg;
	int is_main = mw_dl_is_main(info);
	unsigned i;

	(void)size;
	for (i = 0; i < nobjects; i++) {
		const struct object *o = &objects[i];
		const uint8_t *id = NULL;
		size_t n = 0;

		if (alive[i] || o->bias != info->dlpi_addr ||
		    o->is_main != is_main ||
		    (!is_main && strcmp(o->path, info->dlpi_name)))
			continue;
		n = mapped_build_id(info, &id);
		alive[i] = n == o->build_id_len &&
			   (!n || !memcmp(id, o->build_id, n));
	}
	return 0;
}

/* If an object was loaded or unloaded since the last look, drops the
 * cached objects that are not loaded as they were (the others keep
 * their tables: a process that loads and unloads a plugin all the time
 * does not make every name read its tables again). */
static void check_loader_locked(void)
{
	unsigned long long c[2] = { 0, 0 };
	unsigned char alive[OBJECTS_MAX];
	unsigned i;

	dl_iterate_phdr(loader_counts, c);
	if (c[0] == adds && c[1] == subs)
		return;
	adds = c[0];
	subs = c[1];
	if (paths_used > PATHS_BYTES / 2) {	/* the gone ones' paths */
		drop_all_locked();
		return;
	}
	memset(alive, 0, sizeof(alive));
	dl_iterate_phdr(mark_loaded, alive);
	for (i = nobjects; i-- > 0;) {
		if (alive[i])
			continue;
		tables_bytes -= objects[i].syms.maplen;
		mw_elf_syms_free(&objects[i].syms);
		objects[i] = objects[--nobjects];
		alive[i] = alive[nobjects];
	}
	hint = 0;
}

/* Opens @path read-only without blocking on a FIFO; -1 on failure. */
static int open_file(const char *path)
{
	return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

/* /usr/lib/debug/.build-id/xx/yyyy.debug for @o's build id, opened. */
static int open_debug_file(const struct object *o)
{
	static const char digits[] = "0123456789abcdef";
	char path[64 + 2 * MW_ELF_BUILD_ID_MAX];
	struct sbuf b = { path, 0, sizeof(path) };
	uint32_t i;

	if (o->build_id_len < 2)
		return -1;
	sb_str(&b, "/usr/lib/debug/.build-id/");
	for (i = 0; i < o->build_id_len; i++) {
		sb_mem(&b, &digits[o->build_id[i] >> 4], 1);
		sb_mem(&b, &digits[o->build_id[i] & 15], 1);
		if (i == 0)
			sb_str(&b, "/");
	}
	sb_str(&b, ".debug");
	return open_file(path);
}

/* Reads @o's function table: its file's (the object's own, checked
 * against @f), else its debug file's .symtab; the names dladdr gives
 * otherwise. */
static void read_tables(struct object *o, const struct found *f)
{
	struct mw_elf_want want = {
		f->phnum ? f->phdr : NULL, f->phnum,
		1, o->build_id, o->build_id_len,
	};
	struct mw_elf_syms dbg;
	int fd;

	o->source = SRC_DLADDR;
	if (!f->phnum || !f->path[0])
		return;		/* cannot tell it is the same file */
	fd = open_file(f->is_main ? "/proc/self/exe" : f->path);
	if (fd >= 0) {
		if (!mw_elf_syms_read(fd, &want, &o->syms))
			o->source = o->syms.table == MW_ELF_SYMTAB ?
				    SRC_SYMTAB : SRC_DYNSYM;
		close(fd);
	}
	if (o->source != SRC_SYMTAB) {
		want.phdr = NULL;	/* a debug file's layout differs */
		want.phnum = 0;
		fd = open_debug_file(o);
		if (fd >= 0) {
			if (!mw_elf_syms_read(fd, &want, &dbg)) {
				if (dbg.table == MW_ELF_SYMTAB) {
					mw_elf_syms_free(&o->syms);
					o->syms = dbg;
					o->source = SRC_DEBUG;
				} else {
					mw_elf_syms_free(&dbg);
				}
			}
			close(fd);
		}
	}
	if (tables_bytes + o->syms.maplen > TABLES_BYTES_MAX) {
		mw_elf_syms_free(&o->syms);
		o->source = SRC_DLADDR;
	}
	tables_bytes += o->syms.maplen;
}

/* The object holding @addr: a cached one, else one read now and cached,
 * else (no room left) one named by dladdr alone in @tmp; NULL outside
 * every object. */
static struct object *object_of_locked(uintptr_t addr, struct found *tmp)
{
	struct object *o = NULL;
	unsigned i;

	check_loader_locked();
	if (hint < nobjects && addr - objects[hint].start <
			       objects[hint].limit - objects[hint].start)
		return &objects[hint];
	for (i = 0; i < nobjects; i++) {
		if (addr - objects[i].start <
		    objects[i].limit - objects[i].start) {
			hint = i;
			return &objects[i];
		}
	}
	memset(tmp, 0, offsetof(struct found, path));
	tmp->addr = addr;
	dl_iterate_phdr(find_object, tmp);
	if (!tmp->hit)
		return NULL;
	tmp->o.path = tmp->path[0] ? tmp->path : "?";
	if (nobjects < OBJECTS_MAX && tmp->path[0] &&
	    tmp->pathlen < PATHS_BYTES - paths_used) {
		o = &objects[nobjects];
		*o = tmp->o;
		o->path = memcpy(paths + paths_used, tmp->path,
				 tmp->pathlen + 1);
		paths_used += tmp->pathlen + 1;
		read_tables(o, tmp);
		hint = nobjects++;
		return o;
	}
	tmp->o.source = SRC_DLADDR;	/* never a file read per site */
	return &tmp->o;
}

/* dladdr's exported function covering @addr, or NULL: its answer is the
 * nearest symbol below, which need not cover it. */
static const char *dladdr_function(uintptr_t addr, uint64_t *off)
{
	uintptr_t start;
	Dl_info info;
	size_t size;

	if (!mw_dladdr_size((void *)addr, &info, &size) ||
	    !info.dli_sname || !info.dli_saddr)
		return NULL;
	start = (uintptr_t)info.dli_saddr;
	/* without a size (musl), only the symbol's own address is sure */
	if (addr < start || (size ? addr - start >= size : addr != start))
		return NULL;
	*off = addr - start;
	return info.dli_sname;
}

/* --- exported ---------------------------------------------------------- */

uint32_t mw_symbolize_pass(void)
{
	uint32_t p;

	do
		p = __atomic_add_fetch(&passes, 1, __ATOMIC_RELAXED);
	while (!p);
	return p;
}

size_t mw_site_name_pass(const struct mw_site *s, char *buf, size_t len,
			 uint32_t pass)
{
	struct sbuf b = { buf, 0, len };
	struct found tmp;
	struct object *o;

	if (!len)
		return 0;
	buf[0] = '\0';
	if (s->key) {
		sb_str(&b, s->key);
		return b.len;
	}
	if (mw_jit_name(s)) {
		sb_str(&b, mw_jit_name(s));
		return b.len;
	}
	mw_spin_lock(&sym_lock);
	o = object_of_locked(s->addr, &tmp);
	if (o) {
		const char *fn;
		uint64_t off;

		if (pass)
			o->pass = pass;
		fn = o->source == SRC_DLADDR ?
		     dladdr_function(s->addr, &off) :
		     mw_elf_syms_find(&o->syms, s->addr - o->bias, &off);
		sb_str(&b, o->path);
		sb_str(&b, "(");
		if (fn) {
			sb_str(&b, fn);
			sb_str(&b, "+");
			sb_hex(&b, off);
		} else {
			sb_str(&b, "+");
			sb_hex(&b, s->addr - o->start);
		}
		sb_str(&b, ")");
	}
	mw_spin_unlock(&sym_lock);
	sb_str(&b, "[");
	sb_hex(&b, s->addr);
	sb_str(&b, "]");
	return b.len;
}

size_t mw_site_name(const struct mw_site *s, char *buf, size_t len)
{
	return mw_site_name_pass(s, buf, len, 0);
}

void mw_symbolize_mappings_json(struct mw_out *out, uint32_t pass)
{
	static const char digits[] = "0123456789abcdef";
	unsigned i;

	for (i = 0;; i++) {
		struct object o;
		char path[4096];
		uint32_t k;

		/* one object at a time: no write while holding the lock */
		mw_spin_lock(&sym_lock);
		if (i >= nobjects) {
			mw_spin_unlock(&sym_lock);
			return;
		}
		o = objects[i];
		memcpy(path, o.path, strnlen(o.path, sizeof(path) - 1) + 1);
		path[sizeof(path) - 1] = '\0';
		mw_spin_unlock(&sym_lock);
		if (o.pass != pass)
			continue;
		mw_out_str(out, "{\"type\":\"mapping\",\"path\":");
		mw_out_json_str(out, path);
		mw_out_json_u64(out, "start", o.start);
		mw_out_json_u64(out, "limit", o.limit);
		mw_out_json_u64(out, "offset", o.offset);
		if (o.build_id_len) {
			mw_out_str(out, ",\"build_id\":\"");
			for (k = 0; k < o.build_id_len; k++) {
				mw_out_chr(out, digits[o.build_id[k] >> 4]);
				mw_out_chr(out, digits[o.build_id[k] & 15]);
			}
			mw_out_chr(out, '"');
		}
		mw_out_str(out, ",\"symbols\":\"");
		mw_out_str(out, source_names[o.source]);
		mw_out_str(out, "\"}\n");
	}
}

uint64_t mw_symbolize_memory(void)
{
	return __atomic_load_n(&tables_bytes, __ATOMIC_RELAXED);
}

void mw_symbolize_drop(void)
{
	mw_spin_lock(&sym_lock);
	drop_all_locked();
	mw_spin_unlock(&sym_lock);
}

void mw_symbolize_fork_child(void)
{
	mw_spin_unlock(&sym_lock);
}
