/* SPDX-License-Identifier: MIT */
/* objects.c - see objects.h
 *
 * Ruby is reached through rbcall.h (dlsym, rb_protect).
 */
#define _GNU_SOURCE
#include "report/objects.h"
#include "report/rbcall.h"
#include "report/rbjob.h"
#include "report/dump.h"
#include "report/stats.h"
#include "base/fmt.h"
#include "mwrap.h"
#include "core/rbpos.h"
#include "core/track.h"
#include "base/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

/* The request: written by mw_objects_take while no job runs (after
 * mw_rbjob_begin), read by the job and its dump_all thread. */
static char req_path[PATH_MAX], req_heap_path[PATH_MAX];

/* --- Ruby calls, each under rb_protect ---------------------------------- */

static VALUE get_objectspace(VALUE unused)
{
	(void)unused;
	return mw_rb.const_get(*mw_rb.cObject, mw_rb.intern("ObjectSpace"));
}

static VALUE require_objspace(VALUE unused)
{
	(void)unused;
	return mw_rb.require("objspace");
}

struct dump_all {
	VALUE objectspace;
	int fd;
	const char *path;
};

static VALUE call_dump_all(VALUE arg)
{
	struct dump_all *d = (struct dump_all *)arg;
	VALUE io = mw_rb.io_fdopen(d->fd, O_WRONLY, d->path);
	VALUE kw = mw_rb.hash_new();

	d->fd = -1;		/* the IO owns it now */
	mw_rb.hash_aset(kw, mw_rb.id2sym(mw_rb.intern("output")), io);
	mw_rb.funcallv_kw(d->objectspace, mw_rb.intern("dump_all"), 1, &kw, 1);
	return mw_rb.funcallv(io, mw_rb.intern("close"), 0, NULL);
}

/* --- JSON --------------------------------------------------------------- */

struct pairs {
	struct mw_out *o;
	int n;
};

static const char *symbol_name(VALUE key)
{
	if ((key & 0xff) == STATIC_SYM_FLAG ||
	    (key && !(key & 7) && (*(VALUE *)key & T_MASK) == T_SYMBOL))
		return mw_rb.id2name(mw_rb.sym2id(key));
	return NULL;
}

/* "name":integer for each Symbol => Integer (fixnum) pair. */
static int pair_json(VALUE key, VALUE val, VALUE arg)
{
	struct pairs *p = (struct pairs *)arg;
	const char *name = symbol_name(key);

	if (!name || !(val & 1))
		return 0;	/* ST_CONTINUE */
	if (p->n++)
		mw_out_chr(p->o, ',');
	mw_out_json_str(p->o, name);
	mw_out_chr(p->o, ':');
	mw_out_i64(p->o, (int64_t)val >> 1);
	return 0;
}

/* ,"member":{...} from a Hash, or nothing when @hash is 0. */
static void hash_json(struct mw_out *o, const char *member, VALUE hash)
{
	struct pairs p = { o, 0 };

	if (!hash)
		return;
	mw_out_str(o, ",\"");
	mw_out_str(o, member);
	mw_out_str(o, "\":{");
	mw_rb.hash_foreach(hash, pair_json, (VALUE)&p);
	mw_out_chr(o, '}');
}

/* Names of enum ruby_value_type (public, stable) and of Ruby 3.1's
 * imemo types (internal: later versions may differ). */
static const char *const type_names[32] = {
	[0x01] = "T_OBJECT", [0x02] = "T_CLASS", [0x03] = "T_MODULE",
	[0x04] = "T_FLOAT", [0x05] = "T_STRING", [0x06] = "T_REGEXP",
	[0x07] = "T_ARRAY", [0x08] = "T_HASH", [0x09] = "T_STRUCT",
	[0x0a] = "T_BIGNUM", [0x0b] = "T_FILE", [0x0c] = "T_DATA",
	[0x0d] = "T_MATCH", [0x0e] = "T_COMPLEX", [0x0f] = "T_RATIONAL",
	[0x14] = "T_SYMBOL", [0x1a] = "T_IMEMO", [0x1b] = "T_NODE",
	[0x1c] = "T_ICLASS", [0x1d] = "T_ZOMBIE", [0x1e] = "T_MOVED",
};
static const char *const imemo_names[16] = {
	"imemo_env", "imemo_cref", "imemo_svar", "imemo_throw_data",
	"imemo_ifunc", "imemo_memo", "imemo_ment", "imemo_iseq",
	"imemo_tmpbuf", "imemo_ast", "imemo_parser_strterm",
	"imemo_callinfo", "imemo_callcache", "imemo_constcache",
};

/* One walk over the object heap: what objspace's count_objects_size and
 * count_imemo_objects give, without requiring objspace (require is
 * refused at a safe point: "can't be called from trap context"). */
struct census {
	uint64_t memsize[32], imemo[16];
	uint64_t iseq_bytes;
};

static int take_census(void *start, void *end, size_t stride, void *data)
{
	struct census *c = data;
	char *p;

	for (p = start; p < (char *)end; p += stride) {
		VALUE flags = *(VALUE *)p;
		unsigned type = (unsigned)(flags & T_MASK);

		if (!flags)
			continue;	/* a free slot */
		c->memsize[type] += mw_rb.memsize_of((VALUE)p);
		if (type == T_IMEMO) {
			unsigned k = (unsigned)(flags >> IMEMO_SHIFT) &
				     IMEMO_MASK;

			c->imemo[k]++;
			if (k == IMEMO_ISEQ)
				c->iseq_bytes += mw_rb.memsize_of((VALUE)p);
		}
	}
	return 0;
}

static void census_json(struct mw_out *o, const struct census *c)
{
	uint64_t total = 0;
	int i, n = 0;

	mw_out_str(o, ",\"memsize_by_type\":{");
	for (i = 0; i < 32; i++) {
		if (!type_names[i] || !c->memsize[i])
			continue;
		if (n++)
			mw_out_chr(o, ',');
		mw_out_json_str(o, type_names[i]);
		mw_out_chr(o, ':');
		mw_out_u64(o, c->memsize[i], 0);
		total += c->memsize[i];
	}
	mw_out_str(o, n ? ",\"TOTAL\":" : "\"TOTAL\":");
	mw_out_u64(o, total, 0);
	mw_out_str(o, "},\"imemo_count\":{");
	for (i = n = 0; i < 16; i++) {
		if (!c->imemo[i])
			continue;
		if (n++)
			mw_out_chr(o, ',');
		if (imemo_names[i]) {
			mw_out_json_str(o, imemo_names[i]);
		} else {
			mw_out_str(o, "\"imemo_");
			mw_out_u64(o, (uint64_t)i, 0);
			mw_out_chr(o, '"');
		}
		mw_out_chr(o, ':');
		mw_out_u64(o, c->imemo[i], 0);
	}
	mw_out_str(o, "},\"iseq_count\":");
	mw_out_u64(o, c->imemo[IMEMO_ISEQ], 0);
	mw_out_str(o, ",\"iseq_memsize\":");
	mw_out_u64(o, c->iseq_bytes, 0);
}

static VALUE inspect_errinfo(VALUE err)
{
	volatile VALUE s = mw_rb.funcallv(err, mw_rb.intern("inspect"), 0, NULL);

	return (VALUE)mw_rb.string_value_cstr(&s);
}

/* Appends @s to @buf (@cap bytes, NUL-terminated), truncating. */
static void append(char *buf, size_t cap, const char *s)
{
	size_t n = strlen(buf), k = strnlen(s, cap - n - 1);

	memcpy(buf + n, s, k);
	buf[n + k] = '\0';
}

/* Adds "what: the exception's inspect" (or "what") to the JSON list
 * @errs, and clears the exception; for a step that failed without one,
 * @what alone. */
static void add_error(struct mw_out *errs, int *n, const char *what)
{
	char text[512] = "";
	VALUE err = mw_rb.errinfo();
	int raised = 0;
	VALUE msg = 0;

	if (err && err != QNIL)
		msg = mw_rb.protect(inspect_errinfo, err, &raised);
	mw_rb.set_errinfo(QNIL);
	append(text, sizeof(text), what);
	if (msg && !raised) {
		append(text, sizeof(text), ": ");
		append(text, sizeof(text), (const char *)msg);
	}
	if ((*n)++)
		mw_out_chr(errs, ',');
	mw_out_json_str(errs, text);
}

/* ObjectSpace.dump_all(output: File) into @path; 0, -errno, or -EIO if
 * it raised. */
static int dump_all_to(VALUE objectspace, const char *path)
{
	struct dump_all d = { objectspace, -1, path };
	int raised = 0;

	d.fd = mw_safe_open(path, O_WRONLY | O_TRUNC);
	if (d.fd < 0)
		return d.fd;
	mw_rb.protect(call_dump_all, (VALUE)&d, &raised);
	if (d.fd >= 0)
		close(d.fd);
	return raised ? -EIO : 0;
}

/* The record; runs in the job, on a Ruby thread with the GVL. */
static int write_view(int fd, void *arg)
{
	static struct census census;	/* only the one job runs */
	static struct mw_out errs;
	struct mw_out o;
	struct mw_stats st;
	int raised = 0, nerr = 0;
	VALUE os;

	(void)arg;
	memset(&census, 0, sizeof(census));
	mw_out_init(&errs, -1);
	mw_stats_collect(&st);
	/* The walk first: it finishes a GC under way (rb_objspace_each_objects
	 * runs gc_rest), count_objects does not: taken during a major GC's
	 * incremental marking, it also counts the objects the sweep would
	 * free (Ruby 3.4.3, 1000-string target idle in gets: T_IMEMO 7,026
	 * against 6,129 walked just after). */
	mw_rb.each_objects(take_census, &census);
	mw_out_init(&o, fd);
	mw_out_str(&o, "{\"type\":\"objects\",");
	mw_dump_memory_fields(&o, st.live_bytes, true);
	os = mw_rb.protect(get_objectspace, 0, &raised);
	if (raised)
		add_error(&errs, &nerr, "no ObjectSpace");
	else
		hash_json(&o, "count_objects", mw_rb_try_call(os, "count_objects"));
	hash_json(&o, "gc_stat", mw_rb_try_call(*mw_rb.mGC, "stat"));
	census_json(&o, &census);
	if (req_heap_path[0]) {
		mw_out_str(&o, ",\"heap_dump\":");
		mw_out_json_str(&o, req_heap_path);
	}
	mw_out_str(&o, ",\"errors\":[");
	mw_out_mem(&o, errs.buf, errs.len);
	mw_out_str(&o, "]}\n");
	return mw_out_flush(&o);
}

/* ObjectSpace.dump_all needs `require "objspace"`, refused in the job:
 * a short-lived Ruby thread does it, then ends the request. */
static VALUE dump_all_thread(void *unused)
{
	VALUE os;
	int raised = 0, ret;

	(void)unused;
	mw_track_quiet_enter();
	mw_rb.protect(require_objspace, 0, &raised);
	if (!raised)
		os = mw_rb.protect(get_objectspace, 0, &raised);
	if (raised) {
		mw_rb.set_errinfo(QNIL);
		ret = -ENOENT;
	} else {
		ret = dump_all_to(os, req_heap_path);
	}
	mw_track_quiet_leave();
	mw_rbjob_end(ret);
	return QNIL;
}

static VALUE start_dump_all_thread(VALUE unused)
{
	(void)unused;
	return mw_rb.thread_create(dump_all_thread, NULL);
}

/* The job: the view, then dump_all on a thread of its own. */
static int view_job(void)
{
	int ret;

	mw_track_quiet_enter();	/* what we allocate here is not the app's */
	ret = mw_safe_replace(req_path, 0, write_view, NULL);
	if (!ret && req_heap_path[0]) {
		int raised = 0;

		mw_rb.protect(start_dump_all_thread, 0, &raised);
		if (!raised) {
			mw_track_quiet_leave();
			return MW_RBJOB_LATER;	/* the thread ends the request */
		}
		mw_rb.set_errinfo(QNIL);
		ret = -EAGAIN;
	}
	mw_track_quiet_leave();
	return ret;
}

int mw_objects_take(const char *path, const char *heap_path, int start_ms)
{
	int ret = mw_rbjob_begin();

	if (ret)
		return ret;
	/* no job runs now: the paths are ours until the next one starts */
	if (strlen(path) >= sizeof(req_path) ||
	    strlen(heap_path) >= sizeof(req_heap_path))
		return -ENAMETOOLONG;
	memcpy(req_path, path, strlen(path) + 1);
	memcpy(req_heap_path, heap_path, strlen(heap_path) + 1);
	return mw_rbjob_run(view_job, start_ms);
}
