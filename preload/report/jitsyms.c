/* SPDX-License-Identifier: MIT */
/* jitsyms.c - see jitsyms.h */
#define _GNU_SOURCE
#include "report/jitsyms.h"
#include "base/elfsyms.h"
#include "core/jit.h"
#include "common/libc.h"

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
	r->is_main = mw_dl_is_main(info);
	n = r->is_main ? 0 : strlen(info->dlpi_name);
	if (n < sizeof(r->path))
		memcpy(r->path, r->is_main ? "" : info->dlpi_name, n + 1);
	r->phnum = info->dlpi_phnum <= PHDRS_MAX ? info->dlpi_phnum : 0;
	memcpy(r->phdr, info->dlpi_phdr, r->phnum * sizeof(r->phdr[0]));
	return 1;
}

/* Rust's symbols: legacy mangling (_ZN...17h<16 hex>E, maybe with LTO's
 * ".llvm.N" after it; Ruby has no C++), v0 mangling (_R), and its
 * runtime's allocator shims. */
static int is_rust(const char *name)
{
	const char *llvm = strstr(name, ".llvm.");
	size_t n = llvm ? (size_t)(llvm - name) : strlen(name);

	if (!strncmp(name, "_R", 2) || !strncmp(name, "__rust_", 7) ||
	    !strncmp(name, "__rdl_", 6) || !strncmp(name, "__rg_", 5))
		return 1;
	if (strncmp(name, "_ZN", 3))
		return 0;
	return n > 23 && name[n - 1] == 'E' && !strncmp(name + n - 20, "17h", 3);
}

/* Which JIT crate a Rust symbol is of (MW_JIT_* bits, 0: neither). */
static unsigned crate_of(const char *name)
{
	if (strstr(name, "4yjit"))
		return MW_JIT_YJIT;
	if (strstr(name, "4zjit"))
		return MW_JIT_ZJIT;
	return 0;
}

/* Non-Rust functions that may lie between two Rust ones of one run: the
 * JITs' #[no_mangle] entry points (rb_yjit_*), the Rust runtime's
 * (rust_eh_personality) and compiler_builtins' (__floatsidf, ...), a
 * few dozen in a row at most.  A longer gap is C code of Ruby's. */
#define RUN_GAP_MAX 64

/* A run of Rust functions in a symbol table: its first and last index,
 * how many Rust functions it has and which JIT crates they name. */
struct run {
	uint32_t first, last, count;
	unsigned crates;
};

/* The JIT's runs of Rust functions in @t (by address), no longer gap
 * splitting one: @main, the one with the most Rust functions among those
 * that name a JIT crate, and @cold, the biggest other one (any Rust: only
 * the JIT brings Rust into libruby), where the linker put the cold paths
 * (Vec's growth, panics) apart among C's cold parts: 80 functions on
 * 3.2.8, 82 on 3.4.3, 138 on 4.1.0-dev, in one row each, none of C
 * between; 4.1's call malloc and realloc themselves.  @cold's count is 0
 * when there is none.  Returns whether @main was found. */
static int rust_runs(const struct mw_elf_syms *t, struct run *main,
		     struct run *cold)
{
	struct run r = { 0, 0, 0, 0 }, best = r, other = r;
	uint32_t i, gap = 0;

	for (i = 0; i <= t->n; i++) {
		const char *name = i < t->n ? t->names + t->func[i].name : "";

		if (i < t->n && is_rust(name)) {
			if (!r.count)
				r.first = i;
			r.last = i;
			r.count++;
			r.crates |= crate_of(name);
			gap = 0;
			continue;
		}
		if (r.count && (++gap > RUN_GAP_MAX || i == t->n)) {
			if (r.crates && r.count > best.count) {
				if (best.count > other.count)
					other = best;
				best = r;
			} else if (r.count > other.count) {
				other = r;
			}
			memset(&r, 0, sizeof(r));
		}
	}
	*main = best;
	*cold = other;
	return best.count > 0;
}

/* @r's range of text, relative to the object's load address. */
static struct mw_jit_range text_of(const struct mw_elf_syms *t,
				   const struct run *r, uintptr_t bias)
{
	struct mw_jit_range x = { 0, 0 };
	uint64_t lo, hi;

	if (!r->count)
		return x;
	lo = t->func[r->first].start;
	hi = t->func[r->last].start +
	     (t->func[r->last].size ? t->func[r->last].size : 1);
	x.start = bias + lo;
	x.len = hi - lo;
	return x;
}

int mw_jit_find(void)
{
	static int done;
	struct ruby_object r;
	struct mw_elf_syms t;
	struct mw_elf_want want;
	struct run main, cold;
	struct mw_jit_range text[2];
	void *any;
	int fd, ok = 0;

	if (done)
		return mw_jit_text[0].len != 0;
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
	if (t.table == MW_ELF_SYMTAB && rust_runs(&t, &main, &cold)) {
		text[0] = text_of(&t, &main, r.bias);
		text[1] = text_of(&t, &cold, r.bias);
		mw_jit_set(text, main.crates,
			   dlsym(RTLD_DEFAULT, "rb_yjit_enabled_p"),
			   dlsym(RTLD_DEFAULT, "rb_zjit_entry"));
		ok = 1;
	}
	mw_elf_syms_free(&t);
	return ok;
}
