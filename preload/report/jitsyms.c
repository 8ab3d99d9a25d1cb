/* SPDX-License-Identifier: MIT */
/* jitsyms.c - see jitsyms.h */
#define _GNU_SOURCE
#include "report/jitsyms.h"
#include "base/elfsyms.h"
#include "core/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#define PHDRS_MAX 64

struct ruby_object {
	uintptr_t addr;		/* in: an address inside it */
	int hit, is_main;
	uintptr_t bias;
	char path[512];
	Elf64_Phdr phdr[PHDRS_MAX];
	size_t phnum;
};

static int find_ruby(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ruby_object *r = arg;
	size_t n;
	int i, in = 0;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && r->addr - a < ph->p_memsz)
			in = 1;
	}
	if (!in)
		return 0;
	r->hit = 1;
	r->bias = info->dlpi_addr;
	r->is_main = !info->dlpi_name || !info->dlpi_name[0];
	n = r->is_main ? 0 : strlen(info->dlpi_name);
	if (n < sizeof(r->path))
		memcpy(r->path, r->is_main ? "" : info->dlpi_name, n + 1);
	r->phnum = info->dlpi_phnum <= PHDRS_MAX ? info->dlpi_phnum : 0;
	memcpy(r->phdr, info->dlpi_phdr, r->phnum * sizeof(r->phdr[0]));
	return 1;
}

/* Rust's symbols: legacy mangling (_ZN...17h<hash>E; Ruby has no C++),
 * v0 mangling (_R), and the allocator shims of its runtime. */
static int is_rust(const char *name)
{
	size_t n;

	if (!strncmp(name, "_R", 2) || !strncmp(name, "__rust_", 7) ||
	    !strncmp(name, "__rdl_", 6) || !strncmp(name, "__rg_", 5))
		return 1;
	if (strncmp(name, "_ZN", 3))
		return 0;
	n = strlen(name);
	return n > 21 && name[n - 1] == 'E' && !strncmp(name + n - 21, "17h", 3);
}

/* Which JIT crate a Rust symbol is of (MW_JIT_* bits, 0: neither). */
static unsigned crate_of(const char *name)
{
	if (!strncmp(name, "_ZN4yjit", 8) || strstr(name, "4yjit"))
		return MW_JIT_YJIT;
	if (!strncmp(name, "_ZN4zjit", 8) || strstr(name, "4zjit"))
		return MW_JIT_ZJIT;
	return 0;
}

/* The run of Rust functions in @t: its first and last index, 0 when
 * there is none or a non-Rust function named like Ruby's C (rb_*,
 * ruby_*, or a static one) lies inside it.  Rust's own #[no_mangle]
 * functions (YJIT's rb_yjit_* entry points are some) are in the run;
 * so the test is that no function of Ruby's C object files lies between
 * two Rust ones: those start past the last Rust one or end before the
 * first.  A run is accepted when Rust functions are at least 90% of it. */
static int rust_run(const struct mw_elf_syms *t, uint32_t *first,
		    uint32_t *last, unsigned *crates)
{
	uint32_t i, lo = UINT32_MAX, hi = 0, rust = 0;

	*crates = 0;
	for (i = 0; i < t->n; i++) {
		const char *name = t->names + t->func[i].name;

		if (!is_rust(name))
			continue;
		if (lo == UINT32_MAX)
			lo = i;
		hi = i;
		rust++;
		*crates |= crate_of(name);
	}
	if (lo == UINT32_MAX || !*crates)
		return 0;
	/* the run's other functions: Rust's no_mangle ones, or C */
	if ((uint64_t)rust * 10 < (uint64_t)(hi - lo + 1) * 9)
		return 0;
	*first = lo;
	*last = hi;
	return 1;
}

int mw_jit_find(void)
{
	static int done;
	struct ruby_object r;
	struct mw_elf_syms t;
	struct mw_elf_want want;
	uint32_t first, last;
	unsigned crates;
	uint64_t lo, hi;
	void *any;
	int fd, ok = 0;

	if (done)
		return mw_jit_len != 0;
	done = 1;
	any = dlsym(RTLD_DEFAULT, "ruby_thread_has_gvl_p");
	if (!any)
		return 0;
	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)any;
	dl_iterate_phdr(find_ruby, &r);
	if (!r.hit || !r.phnum || (!r.is_main && !r.path[0]))
		return 0;
	fd = open(r.is_main ? "/proc/self/exe" : r.path,
		  O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	memset(&want, 0, sizeof(want));
	want.phdr = r.phdr;
	want.phnum = r.phnum;
	if (mw_elf_syms_read(fd, &want, &t)) {
		close(fd);
		return 0;
	}
	close(fd);
	if (t.table == MW_ELF_SYMTAB && rust_run(&t, &first, &last, &crates)) {
		lo = t.func[first].start;
		hi = t.func[last].start + (t.func[last].size ? t.func[last].size : 1);
		mw_jit_set(r.bias + lo, hi - lo, crates,
			   dlsym(RTLD_DEFAULT, "rb_yjit_enabled_p"),
			   dlsym(RTLD_DEFAULT, "rb_zjit_entry"));
		ok = 1;
	}
	mw_elf_syms_free(&t);
	return ok;
}
