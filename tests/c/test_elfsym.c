/* SPDX-License-Identifier: MIT */
/* Unit tests for the ELF symbol lookup (inject/base/elfsym.c), on a library
 * built for them (tests/c/elfsym_lib.c, next to this binary as
 * libelfsym.so and, stripped, libelfsym-stripped.so) and on files that
 * are not ELF or are broken. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elf.h>

#include "base/elfsym.h"
#include "tap.h"

/* the TLS and GOT relocation types of this CPU */
#if defined(__x86_64__)
#define TPOFF_RELOC R_X86_64_TPOFF64
#define GLOB_DAT_RELOC R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define TPOFF_RELOC R_AARCH64_TLS_TPREL
#define GLOB_DAT_RELOC R_AARCH64_GLOB_DAT
#endif

static char dir[PATH_MAX], lib[PATH_MAX + 32], stripped[PATH_MAX + 32];
static char tmpdir[] = "/tmp/test_elfsym.XXXXXX";

/* @name's offset from the load base, as the loader sees it. */
static uint64_t loaded_offset(void *handle, const char *name)
{
	void *at = dlsym(handle, name);
	Dl_info info;

	if (!at || !dladdr(at, &info))
		return 0;
	return (uint64_t)((char *)at - (char *)info.dli_fbase);
}

/* A file under tmpdir holding @len bytes of @data. */
static const char *file_with(const char *name, const void *data, size_t len)
{
	static char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
	return path;
}

/* The whole of @path in a malloc'd buffer; *@len gets its size. */
static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0)
		abort();
	rewind(f);
	buf = malloc((size_t)n);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		abort();
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_symbols(void)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	uint64_t v = 0;

	ok(h != NULL, "the test library loads: %s", h ? lib : dlerror());
	if (!h)
		return;
	ok(mwi_elf_symbol(lib, "mwt_function", &v) == 0 &&
	   v == loaded_offset(h, "mwt_function"),
	   "a function's value is its offset from the load base");
	ok(mwi_elf_symbol(lib, "mwt_object", &v) == 0 &&
	   v == loaded_offset(h, "mwt_object"), "an object's too");
	ok(mwi_elf_symbol(lib, "mwt_missing", &v) == -ENOENT,
	   "a name that is not there: -ENOENT");
	ok(mwi_elf_symbol(lib, "puts", &v) == -ENOENT,
	   "an import (undefined here) is not a definition: -ENOENT");
	ok(mwi_elf_symbol(stripped, "mwt_function", &v) == 0 &&
	   v == loaded_offset(h, "mwt_function"),
	   "stripped (no .symtab): found in .dynsym all the same");
	dlclose(h);
}

static void test_find_code(void)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	static const unsigned char absent[] = "no such code in there";
	unsigned char code[16];
	uint64_t v = 0, fn;

	if (!h)
		return;
	fn = loaded_offset(h, "mwt_function");
	/* the function's own first bytes, as loaded */
	memcpy(code, dlsym(h, "mwt_function"), sizeof(code));
	ok(mwi_elf_find_code(lib, code, sizeof(code), &v) == 0 && v == fn,
	   "code bytes are found at their virtual address");
	ok(mwi_elf_find_code(stripped, code, sizeof(code), &v) == 0 &&
	   v == fn, "in the stripped file too");
	ok(mwi_elf_find_code(lib, absent, sizeof(absent), &v) == -ENOENT,
	   "bytes that are not in any executable segment: -ENOENT");
	dlclose(h);
}

/* The GOT slot of a TLS variable, found by its relocation, holds what
 * the loader put there: the variable's offset from the thread pointer
 * (libc's dlerror record, which inject/process/dlerror.c reads in a target). */
static void test_reloc_slot(void)
{
	void *var = dlsym(RTLD_DEFAULT, "__libc_dlerror_result");
	Dl_info info;
	uint64_t v = 0;
	char *tp;

	if (!var || !dladdr((void *)printf, &info)) {
		ok(1, "# SKIP no __libc_dlerror_result (glibc < 2.34)");
		return;
	}
	tp = __builtin_thread_pointer();
	ok(mwi_elf_reloc_slot(info.dli_fname, "__libc_dlerror_result",
			      TPOFF_RELOC, &v) == 0 &&
	   tp + *(int64_t *)((char *)info.dli_fbase + v) == (char *)var,
	   "a TPOFF64 slot holds its variable's offset from the thread "
	   "pointer");
	ok(mwi_elf_reloc_slot(info.dli_fname, "__libc_dlerror_result",
			      GLOB_DAT_RELOC, &v) == -ENOENT,
	   "another relocation type: -ENOENT");
	ok(mwi_elf_reloc_slot(info.dli_fname, "mwt_missing",
			      TPOFF_RELOC, &v) == -ENOENT,
	   "a name that is not there: -ENOENT");
}

static void test_bad_files(void)
{
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	unsigned char *img;
	Elf64_Ehdr *eh;
	const char *path;
	uint64_t v;
	size_t len;
	char missing[PATH_MAX + 64];

	snprintf(missing, sizeof(missing), "%s/missing.so", tmpdir);
	ok(mwi_elf_symbol(missing, "mwt_function", &v) == -ENOENT,
	   "a file that does not exist: -ENOENT");
	path = file_with("text", text, sizeof(text) - 1);
	ok(mwi_elf_symbol(path, "mwt_function", &v) == -ENOEXEC &&
	   mwi_elf_find_code(path, "echo", 4, &v) == -ENOEXEC &&
	   mwi_elf_reloc_slot(path, "x", TPOFF_RELOC, &v) == -ENOEXEC,
	   "a text file: -ENOEXEC");
	path = file_with("empty", "", 0);
	ok(mwi_elf_symbol(path, "mwt_function", &v) == -ENOEXEC,
	   "an empty file: -ENOEXEC");

	img = slurp(lib, &len);
	path = file_with("head", img, sizeof(Elf64_Ehdr) + 8);
	ok(mwi_elf_symbol(path, "mwt_function", &v) == -ENOEXEC &&
	   mwi_elf_find_code(path, "x", 1, &v) == -ENOEXEC,
	   "cut after the ELF header (its tables past the end): -ENOEXEC");
	eh = (Elf64_Ehdr *)img;
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	path = file_with("class32", img, len);
	ok(mwi_elf_symbol(path, "mwt_function", &v) == -ENOEXEC,
	   "a 32-bit ELF class: -ENOEXEC");
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_shnum = 0;
	path = file_with("noshdr", img, len);
	ok(mwi_elf_symbol(path, "mwt_function", &v) == -ENOENT,
	   "no section headers at all: not found, no crash");
	free(img);
}

static void remove_files(void)
{
	static const char *const names[] = {
		"text", "empty", "head", "class32", "noshdr"
	};
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];

	(void)argc;
	snprintf(self, sizeof(self), "%s", argv[0]);
	if (!realpath(dirname(self), dir) || !mkdtemp(tmpdir)) {
		printf("Bail out! %s: %s\n", argv[0], strerror(errno));
		return 1;
	}
	snprintf(lib, sizeof(lib), "%s/libelfsym.so", dir);
	snprintf(stripped, sizeof(stripped), "%s/libelfsym-stripped.so", dir);
	test_symbols();
	test_find_code();
	test_reloc_slot();
	test_bad_files();
	remove_files();
	return tap_done();
}
