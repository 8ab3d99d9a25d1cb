/* SPDX-License-Identifier: MIT */
/* rbcall.h - calling Ruby from the library, which cannot link against
 * libruby (it also loads into processes without Ruby): Ruby's C API
 * found by dlsym, and calls made under rb_protect.  The few object-layout
 * facts used (VALUE tagging, the type bits of RBasic.flags, imemo types)
 * are those of CRuby 3.x on 64-bit Linux.
 */
#ifndef MW_RBCALL_H
#define MW_RBCALL_H

#include <stddef.h>
#include <stdint.h>

typedef uintptr_t VALUE;
typedef uintptr_t ID;

#define QNIL ((VALUE)0x08)		/* with flonums, as on x86_64 */
#define STATIC_SYM_FLAG 0x0c
#define T_MASK 0x1f
#define T_SYMBOL 0x14
#define T_IMEMO 0x1a
#define IMEMO_SHIFT 12			/* FL_USHIFT */
#define IMEMO_MASK 0x0f
#define IMEMO_ISEQ 7

/* Ruby's C API, found by dlsym (NULL until mw_rb_init succeeds). */
struct mw_rb {
	int (*register_one)(unsigned int flags, void (*fn)(void *), void *d);
	/* Ruby 3.3+: a job registered once, then triggered from any thread
	 * (a Ruby thread's trigger flags its own EC) */
	unsigned int (*preregister)(unsigned int flags, void (*fn)(void *),
				    void *d);
	void (*trigger)(unsigned int handle);
	VALUE (*protect)(VALUE (*fn)(VALUE), VALUE arg, int *state);
	VALUE (*funcallv)(VALUE recv, ID mid, int argc, const VALUE *argv);
	VALUE (*funcallv_kw)(VALUE recv, ID mid, int argc, const VALUE *argv,
			     int kw_splat);
	ID (*intern)(const char *name);
	VALUE (*const_get)(VALUE mod, ID id);
	VALUE *cObject;
	VALUE *mGC;
	void (*hash_foreach)(VALUE hash, int (*fn)(VALUE, VALUE, VALUE),
			     VALUE arg);
	ID (*sym2id)(VALUE sym);
	const char *(*id2name)(ID id);
	VALUE (*require)(const char *feature);
	void (*set_errinfo)(VALUE err);
	void (*each_objects)(int (*fn)(void *, void *, size_t, void *),
			     void *data);
	size_t (*memsize_of)(VALUE obj);
	VALUE (*io_fdopen)(int fd, int flags, const char *path);
	VALUE (*hash_new)(void);
	VALUE (*hash_aset)(VALUE hash, VALUE key, VALUE val);
	VALUE (*id2sym)(ID id);
	VALUE (*errinfo)(void);
	VALUE (*thread_create)(VALUE (*fn)(void *), void *arg);
	int (*native_thread_p)(void);
	char *(*string_value_cstr)(volatile VALUE *str);
};
extern struct mw_rb mw_rb;

/* Finds Ruby's C API (after mw_ruby_init).  Returns 1 when every function
 * the object view needs is there, else 0.  Idempotent.
 * Context: not a hook; not a signal handler. */
int mw_rb_init(void);

/* recv.method with no arguments, or 0 (never a valid object) if it
 * raised (the error is cleared).  Context: a Ruby thread holding the
 * GVL. */
VALUE mw_rb_try_call(VALUE recv, const char *method);

#endif
