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

/* Ruby 3.2 and later export neither the EC nor rb_source_location_cstr:
 * there the location comes from the public profiling API (the frames
 * stackprof reads from a signal handler: no allocation, no lock). */
static int via_profile;
/* Set once the process is exiting: from 3.2 nothing we can read says
 * that Ruby's VM is gone (ruby_current_vm_ptr is not exported), while
 * "has the GVL" stays true on the main thread after ruby_vm_destruct
 * (which keeps the main thread's struct) and rb_gc_count then reads a
 * NULL VM.  Our destructor runs in exit before liburcu's (we depend on
 * it), whose calloc crashed there. */
static int vm_gone;
static int (*profile_frames)(int start, int limit, uintptr_t *frames,
			     int *lines);
static uintptr_t (*frame_path)(uintptr_t frame);
static int (*native_thread_p)(void);
#define PROFILE_DEPTH 8		/* C frames above the innermost Ruby one */
#define PROFILE_FIRST 2		/* frames asked for first */

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

/* Ruby 3.2+: the profiling API, where 3.1's symbols are not exported. */
static int find_profile_api(void)
{
	*(void **)&profile_frames = dlsym(RTLD_DEFAULT, "rb_profile_frames");
	*(void **)&frame_path = dlsym(RTLD_DEFAULT, "rb_profile_frame_path");
	*(void **)&string_ptr = dlsym(RTLD_DEFAULT, "rb_string_value_ptr");
	*(void **)&native_thread_p = dlsym(RTLD_DEFAULT, "ruby_native_thread_p");
	return profile_frames && frame_path && string_ptr && native_thread_p;
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
	if (!has_gvl || !gc_count)
		return 0;
	if (source_location && vm_ptr && find_ec_index((void *)has_gvl)) {
		find_frames();
	} else if (find_profile_api()) {
		via_profile = 1;
	} else {
		return 0;
	}
	__atomic_store_n(&mw_ruby_present, 1, __ATOMIC_RELEASE);
	return 1;
}

int mw_ruby_pos(struct mw_ruby_pos *pos)
{
	void **ec;

	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	if (via_profile) {
		/* From 3.2 "has the GVL" reads the thread through the EC
		 * itself: true only once the EC exists. */
		if (__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE) || !has_gvl())
			return 0;
		mw_ruby_generation = gc_count();
		pos->pc = pos->iseq = 0;
		return 1;
	}
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

/* A heap String: a VALUE not special (immediates, nil and false are
 * small or tagged) whose RBasic flags say T_STRING; rb_string_value_ptr
 * on anything else could call #to_str. */
#define T_MASK 0x1f
#define T_STRING 0x05
static int is_string(uintptr_t v)
{
	return v > 4096 && !(v & 7) && (*(const uintptr_t *)v & T_MASK) == T_STRING;
}

/* The innermost frame with a line (C methods' frames have 0), asked
 * of the frames in @start .. @start + @limit - 1.  Ruby computes a line
 * for every Ruby frame it returns (a search in the iseq's line table),
 * so the frames are asked for a few at a time. */
static const char *profile_location_in(int start, int limit, int *line)
{
	uintptr_t frames[PROFILE_DEPTH];
	int lines[PROFILE_DEPTH], n, i;

	n = profile_frames(start, limit, frames, lines);
	for (i = 0; i < n; i++) {
		volatile uintptr_t str;

		if (lines[i] <= 0)
			continue;
		str = frame_path(frames[i]);
		if (!is_string(str))
			return NULL;
		*line = lines[i];
		return string_ptr(&str);
	}
	*line = n < limit ? -1 : 0;	/* -1: no more frames */
	return NULL;
}

/* Mostly the innermost Ruby frame is the first (Ruby code allocating)
 * or the second (under the C method it called).  Rubies that ignore
 * @start (3.1 to 3.3) return the first two again in the second ask:
 * the same answer, a little more work. */
static const char *profile_location(int *line)
{
	const char *p = profile_location_in(0, PROFILE_FIRST, line);

	if (p || *line < 0)
		return p;
	return profile_location_in(PROFILE_FIRST, PROFILE_DEPTH - PROFILE_FIRST,
				   line);
}

int mw_ruby_pos_location(struct mw_ruby_pos *pos, const char **path,
			 int *line)
{
	const char *p = via_profile ? profile_location(line) :
				      source_location(line);

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

__attribute__((destructor)) static void ruby_exiting(void)
{
	__atomic_store_n(&vm_gone, 1, __ATOMIC_RELEASE);
}

int mw_ruby_thread_has_ec_sigsafe(int need_gvl)
{
	void **ec;

	if (!__atomic_load_n(&mw_ruby_present, __ATOMIC_ACQUIRE))
		return 0;
	if (need_gvl && !has_gvl())
		return 0;
	if (via_profile)	/* 3.2+: a Ruby thread is one with an EC */
		return !__atomic_load_n(&vm_gone, __ATOMIC_ACQUIRE) &&
		       native_thread_p();
	ec = __tls_get_addr(&ec_index);
	return *ec != NULL;
}
