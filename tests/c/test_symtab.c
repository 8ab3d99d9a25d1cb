/* SPDX-License-Identifier: MIT */
/* Unit tests for the dump's function tables (preload/base/elfsyms.c): on
 * this program's own file (functions of this file, an alias, a symbol
 * that ends at a return address), on tests/targets/statics and its
 * stripped copy, against the wrong file, and on files that are not ELF or
 * are broken (truncated at every length, bytes flipped). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/elfsyms.h"
#include "common/libc.h"
#include "tap.h"

/* sized_short's symbol ends where its call returns to */
void *sized_short(size_t n);
#if defined(__x86_64__)
#define SIZED_SHORT_LEN 9	/* its bytes up to the return address */
__asm__(".text\n"
	".p2align 4\n"
	".type sized_short, @function\n"
	"sized_short:\n"
	"	sub $8, %rsp\n"
	"	call malloc@PLT\n"
	"sized_short_ret:\n"
	".size sized_short, .-sized_short\n"
	"	add $8, %rsp\n"
	"	ret\n");
#elif defined(__aarch64__)
#define SIZED_SHORT_LEN 12
__asm__(".text\n"
	".p2align 4\n"
	".type sized_short, %function\n"
	"sized_short:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, sp\n"
	"	bl malloc\n"
	"sized_short_ret:\n"
	".size sized_short, .-sized_short\n"
	"	ldp x29, x30, [sp], #16\n"
	"	ret\n");
#else
#error "sized_short: x86_64 and aarch64 only"
#endif
/* hidden: reached directly, not through a GOT slot (aarch64's linker
 * filled the slot of this local label with its function's start) */
extern const char sized_short_ret[] __attribute__((visibility("hidden")));

static __attribute__((noinline)) int local_fn(int x)
{
	return x * 3 + 1;
}

/* one function under three names: the global one without underscores
 * is the one told */
__attribute__((noinline)) int alias_impl(int x);
__attribute__((noinline)) int alias_impl(int x)
{
	return x ^ 0x55;
}
extern int alias_weak(int) __attribute__((weak, alias("alias_impl")));
extern int __alias_under(int) __attribute__((alias("alias_impl")));

static int data_word = 7;

struct self {
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	size_t phnum;
	const uint8_t *id;
	size_t id_len;
	const ElfW(Phdr) *libc_phdr;	/* another object's */
	size_t libc_phnum;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self *s = arg;
	int i;

	(void)size;
	if (!mw_dl_is_main(info)) {
		if (strstr(info->dlpi_name, "libc.so") ||
		    mw_libc_musl_path(info->dlpi_name)) {
			s->libc_phdr = info->dlpi_phdr;
			s->libc_phnum = info->dlpi_phnum;
		}
		return 0;
	}
	s->bias = info->dlpi_addr;
	s->phdr = info->dlpi_phdr;
	s->phnum = info->dlpi_phnum;
	for (i = 0; i < info->dlpi_phnum && !s->id_len; i++)
		if (info->dlpi_phdr[i].p_type == PT_NOTE)
			s->id_len = mw_elf_build_id(
				(const void *)(info->dlpi_addr +
					       info->dlpi_phdr[i].p_vaddr),
				info->dlpi_phdr[i].p_memsz,
				info->dlpi_phdr[i].p_align, &s->id);
	return 0;
}

static int read_path(const char *path, const struct mw_elf_want *want,
		     struct mw_elf_syms *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), ret;

	if (fd < 0)
		return -errno;
	ret = mw_elf_syms_read(fd, want, t);
	close(fd);
	return ret;
}

/* The name found at @addr (an address in this process), or "(none)". */
static const char *name_at(const struct mw_elf_syms *t, const struct self *s,
			   const void *addr, uint64_t *off)
{
	const char *n = mw_elf_syms_find(t, (uintptr_t)addr - s->bias, off);

	return n ? n : "(none)";
}

/* The start of the function named @name in @t, or 0. */
static uint64_t start_of(const struct mw_elf_syms *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->names + t->func[i].name, name))
			return t->func[i].start;
	return 0;
}

static void test_own_file(const struct self *s)
{
	struct mw_elf_want want = { s->phdr, s->phnum, 1, s->id, s->id_len };
	struct mw_elf_syms t;
	uint64_t off = 99;
	const char *n;
	uint32_t i;
	int sorted = 1;

	ok(s->id_len == 20, "this program has a 20-byte build id in memory (%zu)",
	   s->id_len);
	ok(read_path("/proc/self/exe", &want, &t) == 0, "own file read");
	ok(t.table == MW_ELF_SYMTAB, "from .symtab");
	for (i = 1; i < t.n; i++)
		sorted &= t.func[i - 1].start < t.func[i].start;
	ok(t.n > 5 && sorted, "%u functions, one per address, in order", t.n);
	n = name_at(&t, s, (const void *)local_fn, &off);
	ok(!strcmp(n, "local_fn") && off == 0, "a static function: %s+%llu",
	   n, (unsigned long long)off);
	n = name_at(&t, s, (const char *)local_fn + 3, &off);
	ok(!strcmp(n, "local_fn") && off == 3, "inside it: %s+%llu", n,
	   (unsigned long long)off);
	n = name_at(&t, s, (const void *)((uintptr_t)sized_short_ret - 1), &off);
	ok(!strcmp(n, "sized_short") && off == SIZED_SHORT_LEN - 1,
	   "the last byte of a symbol is its: %s+%llu", n,
	   (unsigned long long)off);
	n = name_at(&t, s, sized_short_ret, &off);
	ok(!strcmp(n, "(none)"),
	   "the address just past its end is not its (%s)", n);
	n = name_at(&t, s, (const void *)alias_impl, &off);
	ok(!strcmp(n, "alias_impl"),
	   "of three names at one address, the global one without underscores (%s)",
	   n);
	n = name_at(&t, s, &data_word, &off);
	ok(!strcmp(n, "(none)"), "a data object is no function (%s)", n);
	mw_elf_syms_free(&t);
	ok(t.map == NULL && t.n == 0, "freed");
	(void)alias_weak;
	(void)__alias_under;
}

static void test_wrong_file(const struct self *s)
{
	uint8_t other[20];
	struct mw_elf_want by_id = { NULL, 0, 1, other, sizeof(other) };
	struct mw_elf_want no_id = { NULL, 0, 1, NULL, 0 };
	struct mw_elf_want by_phdr = { s->libc_phdr, s->libc_phnum, 0, NULL, 0 };
	struct mw_elf_syms t;

	memcpy(other, s->id, sizeof(other));
	other[19] ^= 1;
	ok(read_path("/proc/self/exe", &by_id, &t) == -ESTALE,
	   "another build id: -ESTALE");
	ok(read_path("/proc/self/exe", &no_id, &t) == -ESTALE,
	   "an object without a build id is not a file with one");
	ok(s->libc_phdr && read_path("/proc/self/exe", &by_phdr, &t) == -ESTALE,
	   "another object's load segments: -ESTALE");
	ok(t.map == NULL && t.n == 0, "and nothing is left mapped");
}

static void test_statics(const char *dir)
{
	char path[PATH_MAX + 64], stripped[PATH_MAX + 64];
	struct mw_elf_syms t, st;
	uint64_t cache, exported, short_end, off;
	const char *n;

	snprintf(path, sizeof(path), "%s/../targets/statics", dir);
	snprintf(stripped, sizeof(stripped), "%s/../targets/statics-stripped",
		 dir);
	ok(read_path(path, NULL, &t) == 0 && t.table == MW_ELF_SYMTAB,
	   "statics: .symtab");
	cache = start_of(&t, "cache_grow");
	exported = start_of(&t, "exported_grow");
	short_end = start_of(&t, "sized_short");
	ok(cache && exported && short_end, "its three functions are there");
	ok(read_path(stripped, NULL, &st) == 0 && st.table == MW_ELF_DYNSYM,
	   "statics-stripped: .dynsym only");
	n = mw_elf_syms_find(&st, cache + 9, &off);
	ok(!n, "stripped: the static function has no name (%s)", n ? n : "-");
	n = mw_elf_syms_find(&st, exported + 9, &off);
	ok(n && !strcmp(n, "exported_grow") && off == 9,
	   "stripped: the exported one keeps its (%s)", n ? n : "-");
	n = mw_elf_syms_find(&t, short_end + SIZED_SHORT_LEN, &off);
	ok(!n, "statics: sized_short's return address is not sized_short's (%s)",
	   n ? n : "-");
	mw_elf_syms_free(&t);
	mw_elf_syms_free(&st);
}

/* A memfd holding @len bytes of @data (no disk: thousands of them). */
static int fd_with(const void *data, size_t len)
{
	int fd = memfd_create("test_symtab", MFD_CLOEXEC);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		abort();
	return fd;
}

static int read_data(const void *data, size_t len, struct mw_elf_syms *t)
{
	int fd = fd_with(data, len), ret = mw_elf_syms_read(fd, NULL, t);

	close(fd);
	return ret;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t n = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;

	if (!buf || pread(fd, buf, (size_t)n, 0) != n)
		abort();
	close(fd);
	*len = (size_t)n;
	return buf;
}

/* Any table read from a broken file still answers lookups in bounds. */
static int sane(const struct mw_elf_syms *t)
{
	uint64_t off;
	uint32_t i;

	for (i = 0; i < t->n; i += 1 + t->n / 64) {
		const char *n = mw_elf_syms_find(t, t->func[i].start, &off);

		if (!n || strlen(n) > (64u << 20))
			return 0;
	}
	return 1;
}

static void test_broken(const char *dir)
{
	char path[PATH_MAX + 64];
	unsigned char *img, *copy;
	struct mw_elf_syms t;
	unsigned seed = 27, i;
	size_t len, cut;
	int crashes = 0, read_ok = 0, ret;

	ok(read_path("/dev/null", NULL, &t) == -ENOEXEC, "/dev/null: -ENOEXEC");
	ok(read_data("hello, world\n", 13, &t) == -ENOEXEC,
	   "a text file: -ENOEXEC");
	ok(read_path("/", NULL, &t) == -ENOEXEC, "a directory: -ENOEXEC");
	snprintf(path, sizeof(path), "%s/../targets/statics", dir);
	img = slurp(path, &len);
	/* cut short anywhere (every 61st length and the last 200 bytes) */
	for (cut = 0; cut < len; cut += cut + 200 < len ? 61 : 1) {
		ret = read_data(img, cut, &t);
		if (!ret) {
			read_ok++;
			crashes += !sane(&t);
		}
		mw_elf_syms_free(&t);
	}
	ok(!crashes, "truncated copies: no crash, %d readable and sane",
	   read_ok);
	/* bytes flipped in the headers and the tables */
	copy = malloc(len);
	for (i = 0, read_ok = 0; i < 3000; i++) {
		unsigned k, flips = 1 + rand_r(&seed) % 8;

		memcpy(copy, img, len);
		for (k = 0; k < flips; k++) {
			size_t at = rand_r(&seed) % 2 ?
				    (size_t)rand_r(&seed) % 64 :
				    len - 1 - (size_t)rand_r(&seed) % 4096;

			copy[at] ^= (unsigned char)(1u << (rand_r(&seed) % 8));
		}
		ret = read_data(copy, len, &t);
		if (!ret) {
			read_ok++;
			crashes += !sane(&t);
		}
		mw_elf_syms_free(&t);
	}
	ok(!crashes, "3000 copies with bytes flipped: no crash, %d readable",
	   read_ok);
	free(copy);
	free(img);
}

/* The same table from a copy of statics whose .symtab entries are
 * shuffled: the reader sorts. */
static void test_shuffled(const char *dir)
{
	char path[PATH_MAX + 64];
	struct mw_elf_syms t, sh;
	unsigned char *img;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *s;
	unsigned seed = 3, i, same = 1;
	size_t len;

	snprintf(path, sizeof(path), "%s/../targets/statics", dir);
	img = slurp(path, &len);
	eh = (const Elf64_Ehdr *)img;
	s = (const Elf64_Shdr *)(img + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		Elf64_Sym *sym = (Elf64_Sym *)(img + s[i].sh_offset);
		size_t n = s[i].sh_size / sizeof(*sym), j;

		if (s[i].sh_type != SHT_SYMTAB)
			continue;
		for (j = n - 1; j > 1; j--) {	/* entry 0 stays */
			size_t k = 1 + (size_t)rand_r(&seed) % j;
			Elf64_Sym x = sym[j];

			sym[j] = sym[k];
			sym[k] = x;
		}
	}
	ok(read_path(path, NULL, &t) == 0 && read_data(img, len, &sh) == 0,
	   "statics and a copy with its .symtab shuffled");
	same = t.n == sh.n && t.n > 5;
	for (i = 0; same && i < t.n; i++)
		same = t.func[i].start == sh.func[i].start &&
		       t.func[i].size == sh.func[i].size &&
		       !strcmp(t.names + t.func[i].name,
			       sh.names + sh.func[i].name);
	ok(same, "the same %u functions in the same order", sh.n);
	mw_elf_syms_free(&t);
	mw_elf_syms_free(&sh);
	free(img);
}

static void test_notes(void)
{
	unsigned char note[64] = { 0 };
	const uint8_t *id = NULL;
	uint32_t h[3] = { 4, 20, NT_GNU_BUILD_ID };

	memcpy(note, h, sizeof(h));
	memcpy(note + 12, "GNU", 4);
	memset(note + 16, 0xab, 20);
	ok(mw_elf_build_id(note, 36, 4, &id) == 20 && id == note + 16,
	   "a build id note");
	ok(mw_elf_build_id(note, 35, 4, &id) == 0, "cut short: none");
	h[1] = 0xfffffff0u;
	memcpy(note, h, sizeof(h));
	ok(mw_elf_build_id(note, sizeof(note), 4, &id) == 0,
	   "a descriptor longer than the notes: none");
}

struct kinds {
	int main, vdso, both;
	const char *vdso_name;
};

static int count_kinds(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct kinds *k = arg;
	int m = mw_dl_is_main(info), v = mw_dl_is_vdso(info);

	(void)size;
	k->main += m;
	k->vdso += v;
	k->both += m && v;
	if (v)
		k->vdso_name = info->dlpi_name;
	return 0;
}

/* one main program and one vdso, whatever the C library names them
 * (musl: the vdso "", the program argv[0]) */
static void test_main_and_vdso(void)
{
	struct kinds k = { 0 };

	dl_iterate_phdr(count_kinds, &k);
	ok(k.main == 1, "one main program (%d)", k.main);
	ok(k.vdso == (getauxval(AT_SYSINFO_EHDR) != 0), "the vdso (%d, %s)",
	   k.vdso, k.vdso_name ? k.vdso_name : "none");
	ok(k.both == 0, "the vdso is not the main program");
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];
	struct self s = { 0 };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)argc;
	(void)argv;
	if (n <= 0)
		return 2;
	self[n] = '\0';
	dl_iterate_phdr(find_self, &s);
	if (local_fn(1) != 4 || alias_impl(0) != 0x55)
		return 2;
	test_own_file(&s);
	test_wrong_file(&s);
	test_statics(dirname(self));
	test_shuffled(self);	/* dirname wrote into self: the directory */
	test_broken(self);
	test_notes();
	test_main_and_vdso();
	return tap_done();
}
