/* ruby.c - see ruby.h */
#define _GNU_SOURCE
#include "ruby.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

int mw_ruby_present;
uint64_t mw_ruby_generation;

static int (*has_gvl)(void);
static const char *(*source_location)(int *line);
static void **vm_ptr;			/* &ruby_current_vm_ptr */
static size_t (*gc_count)(void);
static uintptr_t *(*ruby_level_cfp)(void *ec, void *cfp);
static uintptr_t (*iseq_path)(uintptr_t iseq);
static char *(*string_ptr)(volatile uintptr_t *str);

/* Ruby 3.1's frame layout, read only on that version, and only while
 * every miss finds the frame Ruby reports (mw_ruby_pos_location). */
static int frames_known;
#define EC_CFP 2	/* rb_execution_context_t: vm_stack, vm_stack_size, cfp */
#define CFP_PC 0	/* rb_control_frame_t: pc, sp, iseq, ... */
#define CFP_ISEQ 2
#define ISEQ_BODY 2	/* rb_iseq_t: flags, wrapper, body */
/* rb_iseq_constant_body: type and iseq_size (32 bits each), then
 * iseq_encoded, the code buffer iseq_size VALUEs long */
struct iseq_body_head {
	int type;
	unsigned int iseq_size;
	uintptr_t iseq_encoded;
};

/* ruby_current_ec is a TLS variable: its address differs per thread, so
 * it is reached like compiled code would, through __tls_get_addr. */
struct tls_index {
	unsigned long module;
	unsigned long offset;
};
extern void *__tls_get_addr(struct tls_index *ti);
static struct tls_index ec_index;

static int find_ec_index(void *any_ruby_symbol)
{
	Dl_info info;
	void *handle, *ec, *block = NULL;
	size_t modid = 0;
	int ok = 0;

	if (!dladdr(any_ruby_symbol, &info))
		return 0;
	handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		handle = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
	if (!handle)
		return 0;
	ec = dlsym(handle, "ruby_current_ec");
	if (ec && dlinfo(handle, RTLD_DI_TLS_MODID, &modid) == 0 &&
	    modid && dlinfo(handle, RTLD_DI_TLS_DATA, &block) == 0 &&
	    block && (char *)ec >= (char *)block) {
		ec_index.module = modid;
		ec_index.offset = (unsigned long)((char *)ec - (char *)block);
		ok = 1;
	}
	dlclose(handle);	/* NOLOAD handle: only drops our reference */
	return ok;
}

static void find_frames(void)
{
	const int *api = dlsym(RTLD_DEFAULT, "ruby_api_version");

	*(void **)&ruby_level_cfp = dlsym(RTLD_DEFAULT,
					  "rb_vm_get_ruby_level_next_cfp");
	*(void **)&iseq_path = dlsym(RTLD_DEFAULT, "rb_iseq_path");
	*(void **)&string_ptr = dlsym(RTLD_DEFAULT, "rb_string_value_ptr");
	frames_known = api && api[0] == 3 && api[1] == 1 && ruby_level_cfp &&
		       iseq_path && string_ptr;
}

int mw_ruby_init(void)
{
	if (mw_ruby_present)
		return 1;
	*(void **)&has_gvl = dlsym(RTLD_DEFAULT, "ruby_thread_has_gvl_p");
	*(void **)&source_location = dlsym(RTLD_DEFAULT,
					   "rb_source_location_cstr");
	vm_ptr = dlsym(RTLD_DEFAULT, "ruby_current_vm_ptr");
	*(void **)&gc_count = dlsym(RTLD_DEFAULT, "rb_gc_count");
	if (!has_gvl || !source_location || !vm_ptr || !gc_count)
		return 0;
	if (!find_ec_index((void *)has_gvl))
		return 0;
	find_frames();
	__atomic_store_n(&mw_ruby_present, 1, __ATOMIC_RELEASE);
	return 1;
}

int mw_ruby_pos(struct mw_ruby_pos *pos)
{
	void **ec;

	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	/* "has the GVL" is only asked of Ruby threads: it reads Ruby's own
	 * thread-local pointer and is false for every other thread. */
	if (!has_gvl() || !*vm_ptr)
		return 0;
	/* During ruby_setup() the GVL is held before the EC exists. */
	ec = __tls_get_addr(&ec_index);
	if (!*ec)
		return 0;
	mw_ruby_generation = gc_count();
	pos->pc = pos->iseq = 0;
	if (__atomic_load_n(&frames_known, __ATOMIC_RELAXED)) {
		void **e = *ec;
		uintptr_t *cfp = ruby_level_cfp(e, e[EC_CFP]);

		if (!cfp)
			return 0;	/* no Ruby code on this thread yet */
		pos->pc = cfp[CFP_PC];
		pos->iseq = cfp[CFP_ISEQ];
	}
	return 1;
}

int mw_ruby_pos_code(const struct mw_ruby_pos *pos, uintptr_t *code)
{
	const struct iseq_body_head *body;
	uintptr_t start;

	if (!pos->pc || !pos->iseq)
		return 0;
	body = ((const struct iseq_body_head **)pos->iseq)[ISEQ_BODY];
	if (!body)
		return 0;
	start = body->iseq_encoded;
	/* the end too: a pc may point just past the last instruction */
	if (pos->pc < start ||
	    pos->pc > start + (uintptr_t)body->iseq_size * sizeof(uintptr_t))
		return 0;
	*code = start;
	return 1;
}

int mw_ruby_pos_location(struct mw_ruby_pos *pos, const char **path,
			 int *line)
{
	const char *p = source_location(line);

	if (pos->pc) {
		/* Ruby found its location through the same frame: the path
		 * is that iseq's own string */
		volatile uintptr_t str = pos->iseq ? iseq_path(pos->iseq) : 0;

		if (!p || !str || string_ptr(&str) != p) {
			__atomic_store_n(&frames_known, 0, __ATOMIC_RELAXED);
			pos->pc = 0;
		}
	}
	if (!p)
		return 0;
	*path = p;
	return 1;
}

int mw_ruby_thread_has_ec_sigsafe(int need_gvl)
{
	void **ec;

	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	if (need_gvl && !has_gvl())
		return 0;
	ec = __tls_get_addr(&ec_index);
	return *ec != NULL;
}
