/* SPDX-License-Identifier: MIT */
/* mwrap_ext.c - the Mwrap Ruby API (mwrap-compatible) over libmwrap.so's
 * exported C API.
 *
 * libmwrap.so is found at call time by its SONAME (preloaded, or
 * dlopen'ed by an attach), so `require "mwrap"` works anywhere and a
 * script may require it before or after an attach.  Without the library
 * every method raises Mwrap::NotLoaded.  Nothing here duplicates the
 * library's logic; results are collected first and yielded afterwards,
 * so a Ruby exception never unwinds through the library.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <ruby.h>
#include <ruby/io.h>

#include "mwrap.h"

static VALUE mMwrap, cSourceLocation, cHeapPageBody, eNotLoaded;

static struct {
	int (*dump_fd)(int, uint64_t, int);
	int (*reset)(void);
	int (*quiet_enter)(void);
	int (*quiet_leave)(void);
	int (*each)(uint64_t, int (*)(const struct mw_site_info *, void *),
		    void *);
	int (*stats)(struct mw_stats *);
	uint32_t (*lookup)(const char *);
	int (*info)(uint32_t, struct mw_site_info *, char *, size_t);
	int (*each_live)(uint32_t, void (*)(uint64_t, uint64_t, void *),
			 void *);
	int (*heap_stat)(struct mw_heap_pages *);
	int (*heap_each)(void (*)(uintptr_t, uint64_t, void *), void *);
} api;
static int api_ready;

static void load_api(void)
{
	void *h = dlopen("libmwrap.so", RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return;
#define SYM(field, name) (*(void **)&api.field = dlsym(h, name))
	SYM(dump_fd, "mw_dump_fd");
	SYM(reset, "mw_reset");
	SYM(quiet_enter, "mw_quiet_enter");
	SYM(quiet_leave, "mw_quiet_leave");
	SYM(each, "mw_each");
	SYM(stats, "mw_stats");
	SYM(lookup, "mw_site_lookup");
	SYM(info, "mw_site_info");
	SYM(each_live, "mw_site_each_live");
	SYM(heap_stat, "mw_heap_pages_stat");
	SYM(heap_each, "mw_heap_pages_each");
#undef SYM
	api_ready = api.dump_fd && api.reset && api.quiet_enter &&
		    api.quiet_leave && api.each && api.stats && api.lookup &&
		    api.info && api.each_live && api.heap_stat && api.heap_each;
}

static void need_api(void)
{
	if (!api_ready)
		load_api();
	if (!api_ready)
		rb_raise(eNotLoaded, "libmwrap.so is not loaded in this process: "
			 "start it with `mwrap ruby ...`, or attach with "
			 "`mwrap-attach -p %d --keep`", (int)getpid());
}

/* Yields each collected row: results are gathered first, so that a
 * Ruby exception in the block never unwinds through libmwrap. */
static void yield_rows(VALUE rows)
{
	long i;

	for (i = 0; i < RARRAY_LEN(rows); i++)
		rb_yield_splat(RARRAY_AREF(rows, i));
	RB_GC_GUARD(rows);
}

static uint64_t min_arg(int argc, VALUE *argv, int i)
{
	return argc > i && !NIL_P(argv[i]) ? NUM2ULL(argv[i]) : 0;
}

/* Mwrap.dump(io = $stderr, min = 0) -> nil */
static VALUE mwrap_dump(int argc, VALUE *argv, VALUE mod)
{
	VALUE io;
	int ret;

	rb_check_arity(argc, 0, 2);
	io = argc > 0 && !NIL_P(argv[0]) ? argv[0] : rb_stderr;
	if (!RTEST(rb_obj_is_kind_of(io, rb_cIO)))
		rb_raise(rb_eTypeError, "wrong argument type %s (expected IO)",
			 rb_obj_classname(io));
	need_api();
	io = rb_io_get_write_io(io);
	rb_io_flush(io);
	ret = api.dump_fd(NUM2INT(rb_funcall(io, rb_intern("fileno"), 0)),
			  min_arg(argc, argv, 1), 0);
	if (ret)
		rb_syserr_fail(-ret, "Mwrap.dump");
	return Qnil;
}

/* Mwrap.reset -> nil (also Mwrap.clear) */
static VALUE mwrap_reset(VALUE mod)
{
	need_api();
	api.reset();
	return Qnil;
}

static VALUE location_string(const char *s)
{
	return rb_str_to_interned_str(rb_utf8_str_new_cstr(s));
}

static int collect_site(const struct mw_site_info *si, void *arg)
{
	VALUE row = rb_ary_new_capa(6);

	rb_ary_push(row, location_string(si->location));
	rb_ary_push(row, ULL2NUM(si->total));
	rb_ary_push(row, ULL2NUM(si->allocations));
	rb_ary_push(row, ULL2NUM(si->frees));
	rb_ary_push(row, ULL2NUM(si->age_total));
	rb_ary_push(row, ULL2NUM(si->max_lifespan));
	rb_ary_push((VALUE)arg, row);
	return 0;
}

/* Mwrap.each(min = 0) { |location, total, allocations, frees, age_total,
 * max_lifespan| } -> nil */
static VALUE mwrap_each(int argc, VALUE *argv, VALUE mod)
{
	VALUE rows = rb_ary_new();

	rb_check_arity(argc, 0, 1);
	RETURN_ENUMERATOR(mod, argc, argv);
	need_api();
	api.each(min_arg(argc, argv, 0), collect_site, (void *)rows);
	yield_rows(rows);
	return Qnil;
}

static int collect_site_hash(const struct mw_site_info *si, void *arg)
{
	VALUE h = rb_hash_new();

#define F(k, v) rb_hash_aset(h, ID2SYM(rb_intern(k)), (v))
	F("location", location_string(si->location));
	F("total", ULL2NUM(si->total));
	F("allocations", ULL2NUM(si->allocations));
	F("frees", ULL2NUM(si->frees));
	F("freed_bytes", ULL2NUM(si->freed_bytes));
	F("live_bytes", ULL2NUM(si->live_bytes));
	F("live_count", ULL2NUM(si->live_count));
	F("age_total", ULL2NUM(si->age_total));
	F("max_lifespan", ULL2NUM(si->max_lifespan));
#undef F
	rb_ary_push((VALUE)arg, h);
	return 0;
}

/* Mwrap.sites(min = 0) -> [{location:, total:, allocations:, frees:,
 * freed_bytes:, live_bytes:, live_count:, age_total:, max_lifespan:}]
 * (not in mwrap: Mwrap.each has no live figures) */
static VALUE mwrap_sites(int argc, VALUE *argv, VALUE mod)
{
	VALUE rows = rb_ary_new();

	rb_check_arity(argc, 0, 1);
	need_api();
	api.each(min_arg(argc, argv, 0), collect_site_hash, (void *)rows);
	return rows;
}

static VALUE quiet_leave(VALUE unused)
{
	api.quiet_leave();
	return Qnil;
}

/* Mwrap.quiet { |depth| } -> the block's value */
static VALUE mwrap_quiet(VALUE mod)
{
	int depth;

	rb_need_block();
	need_api();
	depth = api.quiet_enter();
	return rb_ensure(rb_yield, INT2NUM(depth), quiet_leave, Qnil);
}

static VALUE mwrap_total_allocated(VALUE mod)
{
	struct mw_stats st;

	need_api();
	api.stats(&st);
	return ULL2NUM(st.total_bytes);
}

static VALUE mwrap_total_freed(VALUE mod)
{
	struct mw_stats st;

	need_api();
	api.stats(&st);
	return ULL2NUM(st.freed_bytes);
}

/* --- Mwrap::SourceLocation: wraps a site id (sites are never freed) -- */

static const rb_data_type_t srcloc_type = {
	.wrap_struct_name = "Mwrap::SourceLocation",
	.flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static uint32_t srcloc_id(VALUE self)
{
	return (uint32_t)(uintptr_t)rb_check_typeddata(self, &srcloc_type);
}

static void srcloc_info(VALUE self, struct mw_site_info *si, char *buf,
			size_t len)
{
	need_api();
	if (api.info(srcloc_id(self), si, buf, len))
		rb_raise(rb_eRuntimeError, "source location vanished");
}

/* Mwrap[location] -> Mwrap::SourceLocation or nil */
static VALUE mwrap_aref(VALUE mod, VALUE loc)
{
	uint32_t id;

	need_api();
	id = api.lookup(StringValueCStr(loc));
	if (!id)
		return Qnil;
	return TypedData_Wrap_Struct(cSourceLocation, &srcloc_type,
				     (void *)(uintptr_t)id);
}

#define SRCLOC_FIELD(fn, field)					\
	static VALUE fn(VALUE self)					\
	{								\
		struct mw_site_info si;					\
		char buf[4096];						\
									\
		srcloc_info(self, &si, buf, sizeof(buf));		\
		return ULL2NUM(si.field);				\
	}
SRCLOC_FIELD(srcloc_total, total)
SRCLOC_FIELD(srcloc_allocations, allocations)
SRCLOC_FIELD(srcloc_frees, frees)
SRCLOC_FIELD(srcloc_max_lifespan, max_lifespan)

/* #mean_lifespan -> Float, Infinity when nothing was freed */
static VALUE srcloc_mean_lifespan(VALUE self)
{
	struct mw_site_info si;
	char buf[4096];

	srcloc_info(self, &si, buf, sizeof(buf));
	return DBL2NUM(si.frees ? (double)si.age_total / (double)si.frees
				: HUGE_VAL);
}

static VALUE srcloc_name(VALUE self)
{
	struct mw_site_info si;
	char buf[4096];

	srcloc_info(self, &si, buf, sizeof(buf));
	return location_string(si.location);
}

/* Collects (size or address, generation) pairs into the Array @arg, to
 * be yielded once the library's iteration is over. */
static void collect_pair(uint64_t first, uint64_t generation, void *arg)
{
	rb_ary_push((VALUE)arg, rb_assoc_new(ULL2NUM(first), ULL2NUM(generation)));
}

/* #each { |size, generation| } over the live blocks of this site */
static VALUE srcloc_each(VALUE self)
{
	VALUE rows = rb_ary_new();

	RETURN_ENUMERATOR(self, 0, 0);
	need_api();
	api.each_live(srcloc_id(self), collect_pair, (void *)rows);
	yield_rows(rows);
	return self;
}

/* --- Mwrap::HeapPageBody: Ruby's object heap pages --------------------- */

/* HeapPageBody.each { |address, generation| } -> nil */
static VALUE hpb_each(VALUE mod)
{
	VALUE rows = rb_ary_new();

	RETURN_ENUMERATOR(mod, 0, 0);
	need_api();
	api.heap_each(collect_pair, (void *)rows);
	yield_rows(rows);
	return Qnil;
}

static void set(VALUE h, const char *key, VALUE v)
{
	rb_hash_aset(h, ID2SYM(rb_intern(key)), v);
}

/* HeapPageBody.stat(hash = {}) -> hash: lifespans of freed pages in GC
 * generations (mwrap's keys), and page counts and bytes.  deathspan_*
 * and resurrects stay empty: mwrap measured them by parking freed pages,
 * which changes the allocator; we never do. */
static VALUE hpb_stat(int argc, VALUE *argv, VALUE mod)
{
	struct mw_heap_pages st;
	VALUE h;

	rb_check_arity(argc, 0, 1);
	h = argc ? argv[0] : rb_hash_new();
	Check_Type(h, T_HASH);
	need_api();
	api.heap_stat(&st);
	set(h, "lifespan_max", LL2NUM(st.lifespan_max));
	set(h, "lifespan_min", LL2NUM(st.lifespan_min));
	set(h, "lifespan_mean", DBL2NUM(st.lifespan_mean));
	set(h, "lifespan_stddev", DBL2NUM(st.lifespan_stddev));
	set(h, "deathspan_max", INT2NUM(-1));
	set(h, "deathspan_min", INT2NUM(-1));
	set(h, "deathspan_mean", DBL2NUM(HUGE_VAL));
	set(h, "deathspan_stddev", DBL2NUM(0.0));
	set(h, "resurrects", INT2NUM(0));
	set(h, "page_size", ULL2NUM(st.page_size));
	set(h, "pages", ULL2NUM(st.live_pages));
	set(h, "bytes", ULL2NUM(st.live_pages * st.page_size));
	set(h, "allocated_pages", ULL2NUM(st.allocated_pages));
	set(h, "freed_pages", ULL2NUM(st.freed_pages));
	return h;
}

void Init_mwrap_ext(void)
{
	mMwrap = rb_define_module("Mwrap");
	rb_define_const(mMwrap, "VERSION", rb_str_freeze(rb_str_new_cstr(MW_VERSION)));
	eNotLoaded = rb_define_class_under(mMwrap, "NotLoaded",
					   rb_eStandardError);
	cSourceLocation = rb_define_class_under(mMwrap, "SourceLocation",
						rb_cObject);
	rb_undef_alloc_func(cSourceLocation);
	cHeapPageBody = rb_define_class_under(mMwrap, "HeapPageBody",
					      rb_cObject);
	rb_define_singleton_method(cHeapPageBody, "each", hpb_each, 0);
	rb_define_singleton_method(cHeapPageBody, "stat", hpb_stat, -1);

	rb_define_singleton_method(mMwrap, "dump", mwrap_dump, -1);
	rb_define_singleton_method(mMwrap, "reset", mwrap_reset, 0);
	rb_define_singleton_method(mMwrap, "clear", mwrap_reset, 0);
	rb_define_singleton_method(mMwrap, "each", mwrap_each, -1);
	rb_define_singleton_method(mMwrap, "[]", mwrap_aref, 1);
	rb_define_singleton_method(mMwrap, "sites", mwrap_sites, -1);
	rb_define_singleton_method(mMwrap, "quiet", mwrap_quiet, 0);
	rb_define_singleton_method(mMwrap, "total_bytes_allocated",
				   mwrap_total_allocated, 0);
	rb_define_singleton_method(mMwrap, "total_bytes_freed",
				   mwrap_total_freed, 0);

	rb_define_method(cSourceLocation, "each", srcloc_each, 0);
	rb_define_method(cSourceLocation, "total", srcloc_total, 0);
	rb_define_method(cSourceLocation, "allocations", srcloc_allocations, 0);
	rb_define_method(cSourceLocation, "frees", srcloc_frees, 0);
	rb_define_method(cSourceLocation, "mean_lifespan",
			 srcloc_mean_lifespan, 0);
	rb_define_method(cSourceLocation, "max_lifespan", srcloc_max_lifespan, 0);
	rb_define_method(cSourceLocation, "name", srcloc_name, 0);
}
