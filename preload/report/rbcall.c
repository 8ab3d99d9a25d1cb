/* SPDX-License-Identifier: MIT */
/* rbcall.c - see rbcall.h */
#define _GNU_SOURCE
#include "report/rbcall.h"
#include "core/rbpos.h"

#include <dlfcn.h>

struct mw_rb mw_rb;
/* 1 once mw_rb_init found everything; set by the helper thread before
 * any job can use the table. */
static int rb_found;

int mw_rb_init(void)
{
#define SYM(field, name) \
	(*(void **)&mw_rb.field = dlsym(RTLD_DEFAULT, name)) != NULL
	if (rb_found)
		return 1;
	if (!mw_ruby_init())
		return 0;
	if (SYM(preregister, "rb_postponed_job_preregister") &&
	    SYM(trigger, "rb_postponed_job_trigger"))
		mw_rb.register_one = NULL;	/* deprecated from 3.3 */
	else if (!(SYM(register_one, "rb_postponed_job_register_one")))
		return 0;
	rb_found = SYM(protect, "rb_protect") && SYM(funcallv, "rb_funcallv") &&
		   SYM(funcallv_kw, "rb_funcallv_kw") &&
		   SYM(intern, "rb_intern") && SYM(const_get, "rb_const_get") &&
		   SYM(cObject, "rb_cObject") && SYM(mGC, "rb_mGC") &&
		   SYM(hash_foreach, "rb_hash_foreach") &&
		   SYM(sym2id, "rb_sym2id") && SYM(id2name, "rb_id2name") &&
		   SYM(require, "rb_require") &&
		   SYM(set_errinfo, "rb_set_errinfo") &&
		   SYM(each_objects, "rb_objspace_each_objects") &&
		   SYM(memsize_of, "rb_obj_memsize_of") &&
		   SYM(io_fdopen, "rb_io_fdopen") &&
		   SYM(hash_new, "rb_hash_new") &&
		   SYM(hash_aset, "rb_hash_aset") && SYM(id2sym, "rb_id2sym") &&
		   SYM(errinfo, "rb_errinfo") &&
		   SYM(thread_create, "rb_thread_create") &&
		   SYM(native_thread_p, "ruby_native_thread_p") &&
		   SYM(string_value_cstr, "rb_string_value_cstr");
#undef SYM
	return rb_found;
}

/* One call under rb_protect. */
struct call {
	VALUE recv;
	const char *method;
};

static VALUE call0(VALUE arg)
{
	const struct call *c = (const struct call *)arg;

	return mw_rb.funcallv(c->recv, mw_rb.intern(c->method), 0, NULL);
}

VALUE mw_rb_try_call(VALUE recv, const char *method)
{
	struct call c = { recv, method };
	int raised = 0;
	VALUE v = mw_rb.protect(call0, (VALUE)&c, &raised);

	if (raised) {
		mw_rb.set_errinfo(QNIL);
		return 0;
	}
	return v;
}
