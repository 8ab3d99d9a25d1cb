/* objects.c - see objects.h
 *
 * Ruby is reached through rbcall.h (dlsym, rb_protect).
 */
#define _GNU_SOURCE
#include "report/objects.h"
#include "report/rbcall.h"
#include "report/dump.h"
#include "report/stats.h"
#include "base/fmt.h"
#include "mwrap.h"
#include "core/rbpos.h"
#include "core/track.h"
#include "base/safefile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RUNNING_MAX_MS 600000

#define NO_HANDLE 0xffffffffu	/* POSTPONED_JOB_HANDLE_INVALID */
/* Ruby 3.3+: registered once by the helper, read by signal handlers. */
static unsigned int job_handle = NO_HANDLE;

/* One request at a time.  IDLE -> WAITING (helper) -> RUNNING (job) ->
 * DONE (job) -> IDLE (helper); the helper gives up with WAITING -> IDLE,
 * after which a late job does nothing. */
enum { IDLE, WAITING, RUNNING, DONE };
static int state;
static int registered;		/* some thread registered the job */
static int idle;		/* no GVL holder took it: any Ruby thread may */
/* Ruby threads that flagged themselves for the job while idle: each is
 * knocked out of its blocking call until one runs it. */
#define FLAGGED_MAX 64
static pid_t flagged[FLAGGED_MAX];
static unsigned nflagged;
/* Handed over by the state machine: the helper writes the request
 * paths before WAITING, the job reads them and writes job_result before
 * DONE (release), the helper reads it after seeing DONE (acquire). */
static int job_result;
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
	mw_out_init(&o, fd);
	mw_out_str(&o, "{\"type\":\"objects\",");
	mw_dump_memory_fields(&o, st.live_bytes);
	os = mw_rb.protect(get_objectspace, 0, &raised);
	if (raised)
		add_error(&errs, &nerr, "no ObjectSpace");
	else
		hash_json(&o, "count_objects", mw_rb_try_call(os, "count_objects"));
	hash_json(&o, "gc_stat", mw_rb_try_call(*mw_rb.mGC, "stat"));
	mw_rb.each_objects(take_census, &census);
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
	int raised = 0;

	(void)unused;
	mw_track_quiet_enter();
	mw_rb.protect(require_objspace, 0, &raised);
	if (!raised)
		os = mw_rb.protect(get_objectspace, 0, &raised);
	if (raised) {
		mw_rb.set_errinfo(QNIL);
		job_result = -ENOENT;
	} else {
		job_result = dump_all_to(os, req_heap_path);
	}
	mw_track_quiet_leave();
	__atomic_store_n(&state, DONE, __ATOMIC_RELEASE);
	return QNIL;
}

static VALUE start_dump_all_thread(VALUE unused)
{
	(void)unused;
	return mw_rb.thread_create(dump_all_thread, NULL);
}

static void job(void *unused)
{
	int expected = WAITING;

	(void)unused;
	if (!__atomic_compare_exchange_n(&state, &expected, RUNNING, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;		/* the helper gave up on this request */
	mw_track_quiet_enter();	/* what we allocate here is not the app's */
	job_result = mw_safe_replace(req_path, 0, write_view, NULL);
	if (!job_result && req_heap_path[0]) {
		int raised = 0;

		mw_rb.protect(start_dump_all_thread, 0, &raised);
		if (!raised) {
			mw_track_quiet_leave();
			return;		/* the thread ends the request */
		}
		mw_rb.set_errinfo(QNIL);
		job_result = -EAGAIN;
	}
	mw_track_quiet_leave();
	__atomic_store_n(&state, DONE, __ATOMIC_RELEASE);
}

static int is_flagged_sigsafe(pid_t tid)
{
	unsigned i, n = __atomic_load_n(&nflagged, __ATOMIC_ACQUIRE);

	for (i = 0; i < n && i < FLAGGED_MAX; i++)
		if (__atomic_load_n(&flagged[i], __ATOMIC_RELAXED) == tid)
			return 1;
	return 0;
}

static void remember_flagged_sigsafe(pid_t tid)
{
	unsigned i;

	if (is_flagged_sigsafe(tid))
		return;
	i = __atomic_fetch_add(&nflagged, 1, __ATOMIC_ACQ_REL);
	if (i < FLAGGED_MAX)
		__atomic_store_n(&flagged[i], tid, __ATOMIC_RELEASE);
}

/* rb_postponed_job_register_one flags the calling thread's execution
 * context, whichever thread queued the job first (it returns 2 for a
 * job already queued): every thread that calls it may run it, and the
 * first one to check its interrupts does.  So every Ruby thread that
 * gets the signal registers: one that runs Ruby code (or sleeps in
 * Ruby: ruby_thread_has_gvl_p says yes then), and once the process has
 * looked idle for a second, one blocked in a system call too. */
void mw_objects_on_signal_sigsafe(void)
{
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != WAITING)
		return;
	if (!mw_ruby_thread_has_ec_sigsafe(1) &&
	    !(__atomic_load_n(&idle, __ATOMIC_ACQUIRE) &&
	      mw_rb.native_thread_p() && mw_ruby_thread_has_ec_sigsafe(0)))
		return;
	if (mw_rb.trigger) {
		mw_rb.trigger(job_handle);	/* flags this thread's EC */
	} else if (!mw_rb.register_one(0, job, NULL)) {
		return;
	}
	__atomic_store_n(&registered, 1, __ATOMIC_RELEASE);
	remember_flagged_sigsafe((pid_t)syscall(SYS_gettid));
}

/* --- the helper's side ---------------------------------------------------- */

/* Queues a marked SIGURG to every thread but the caller and those
 * already flagged for the job: these are being kicked with SIGVTALRM,
 * and when both signals are pending the first delivered, our SA_RESTART
 * SIGURG, decides that an interrupted read() restarts rather than fails
 * with EINTR, so the kick would be lost. */
static void signal_threads(void)
{
	char buf[4096];
	pid_t pid = getpid(), self = (pid_t)syscall(SYS_gettid);
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			pid_t tid = 0;
			const char *c;
			siginfo_t si;

			off += d->reclen;
			for (c = d->name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (*c || tid <= 0 || tid == self ||
			    is_flagged_sigsafe(tid))
				continue;
			memset(&si, 0, sizeof(si));
			si.si_signo = SIGURG;
			si.si_code = SI_QUEUE;
			si.si_pid = pid;
			si.si_uid = getuid();
			si.si_value.sival_int = MW_OBJECTS_SIGVAL;
			syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGURG, &si);
		}
	}
	close(fd);
}

/* Ruby knocks a thread out of a blocking system call with SIGVTALRM,
 * whose handler it installs without SA_RESTART: the call fails with
 * EINTR and the thread checks its interrupts, our job among them.  We
 * send it only when that handler is in place. */
static int ruby_kick_installed(void)
{
	struct sigaction sa;

	if (sigaction(SIGVTALRM, NULL, &sa))
		return 0;
	if (sa.sa_flags & SA_RESTART)
		return 0;
	if (sa.sa_flags & SA_SIGINFO)
		return sa.sa_sigaction != NULL;
	return sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN;
}

static void kick_flagged(void)
{
	unsigned i, n = __atomic_load_n(&nflagged, __ATOMIC_ACQUIRE);

	for (i = 0; i < n && i < FLAGGED_MAX; i++) {
		pid_t tid = __atomic_load_n(&flagged[i], __ATOMIC_ACQUIRE);

		if (tid > 0)
			syscall(SYS_tgkill, getpid(), tid, SIGVTALRM);
	}
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int mw_objects_take(const char *path, const char *heap_path, int start_ms)
{
	int expected, waited = 0, running_ms = 0, kick;

	if (!mw_rb_init())
		return -ENOSYS;
	if (mw_rb.trigger && job_handle == NO_HANDLE) {
		/* from any thread; a handle lasts for the process's life */
		job_handle = mw_rb.preregister(0, job, NULL);
		if (job_handle == NO_HANDLE)
			return -ENOSPC;
	}
	expected = DONE;	/* a job we stopped waiting for has ended */
	__atomic_compare_exchange_n(&state, &expected, IDLE, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != IDLE)
		return -EBUSY;
	if (strlen(path) >= sizeof(req_path) ||
	    strlen(heap_path) >= sizeof(req_heap_path))
		return -ENAMETOOLONG;
	memcpy(req_path, path, strlen(path) + 1);
	memcpy(req_heap_path, heap_path, strlen(heap_path) + 1);
	__atomic_store_n(&registered, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&idle, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&nflagged, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&state, WAITING, __ATOMIC_RELEASE);
	/* Every 10 ms until a Ruby thread registered the job, then every
	 * 100 ms.  After a second (an idle process: every Ruby thread
	 * blocked), threads in system calls register too, and the
	 * registered ones are knocked out of their blocking calls every
	 * 100 ms, as Ruby itself would do. */
	kick = ruby_kick_installed();
	while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == WAITING) {
		if (waited >= start_ms) {
			expected = WAITING;
			if (__atomic_compare_exchange_n(&state, &expected, IDLE,
							0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				return -ETIMEDOUT;
			break;	/* it just started */
		}
		if (waited >= 1000)
			__atomic_store_n(&idle, 1, __ATOMIC_RELEASE);
		/* a signal also wakes a thread sleeping in ppoll for Ruby */
		if (!__atomic_load_n(&registered, __ATOMIC_ACQUIRE) ||
		    waited % 100 == 0)
			signal_threads();
		if (kick && waited >= 1000 && waited % 100 == 0)
			kick_flagged();
		sleep_ms(10);
		waited += 10;
	}
	/* The job runs Ruby code (dump_all of a large heap takes a while)
	 * and cannot be stopped; after RUNNING_MAX_MS we stop waiting, and
	 * new requests are refused until it ends. */
	while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == RUNNING) {
		if (running_ms >= RUNNING_MAX_MS)
			return -ETIMEDOUT;
		sleep_ms(10);
		running_ms += 10;
	}
	__atomic_store_n(&state, IDLE, __ATOMIC_RELEASE);
	return job_result;
}

unsigned mw_objects_flagged(void)
{
	unsigned n = __atomic_load_n(&nflagged, __ATOMIC_ACQUIRE);

	return n < FLAGGED_MAX ? n : FLAGGED_MAX;
}
