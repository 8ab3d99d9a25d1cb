/* attach.c - late mode: mw_attach() starts a helper thread that hooks
 * the GOT, serves SIGURG and the control file, and undoes it all at
 * detach.  Its files live in a private runtime directory (rundir.h);
 * with a lease (attach option lease:N) it detaches by itself when no
 * command came for N seconds: the front end that owned the window died.
 *
 * mw_attach() runs in a thread the injector hijacked, so it only starts
 * the helper and returns; everything else happens on the helper, which
 * blocks all signals.
 */
#define _GNU_SOURCE
#include "base/command.h"
#include "report/dump.h"
#include "base/fmt.h"
#include "control/fork.h"
#include "hook/got.h"
#include "core/hooklist.h"
#include "hook/rbheap.h"
#include "inject_abi.h"
#include "core/live.h"
#include "mwrap.h"
#include "report/objects.h"
#include "base/options.h"
#include "core/real.h"
#include "core/rbpos.h"
#include "base/rundir.h"
#include "base/safefile.h"
#include "core/sample.h"
#include "core/sites.h"
#include "core/track.h"
#include "control/sigurg.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define SCAN_BUDGET_MS 30000	/* dump --scan reads memory this long at most */
#define OBJECTS_START_MS 5000	/* a Ruby thread must take the job by then */

/* Attach state.  `attached` is set by mw_attach and cleared by the
 * helper when it has undone everything; the rest is owned by the helper
 * while it runs. */
static int attached;
/* Set from a detach's first step until attached is 0 again: the front end
 * has its "ok detach" a moment before the helper has finished, and an
 * attach arriving then waits for it rather than read "already attached". */
static int detaching;
static int stop_requested;
static pthread_t helper;
static int efd = -1;			/* SIGURG + stop wake-ups */
static struct mw_options opts;
static struct mw_rundir rundir = { -1, "" };
static char dump_path[PATH_MAX];
static char named_path[PATH_MAX];	/* a command's plain name, joined */
static int ctl_fd = -1, out_fd = -1, ino_fd = -1;
static uint64_t lease_ns, lease_end;	/* 0: no lease */
static off_t ctl_off;
static char line[MW_CMD_LINE_MAX + 1];
static size_t line_len;
static int line_too_long;
static uint64_t last_stats_ns, last_stats_allocs;
static int atfork_registered;
static pid_t pid_at_attach;


/* --- answers ----------------------------------------------------------- */

static void answer(const char *a, const char *b)
{
	struct mw_out o;

	mw_out_init(&o, out_fd);
	mw_out_str(&o, a);
	mw_out_str(&o, b);
	mw_out_chr(&o, '\n');
	mw_out_flush(&o);
}

/* "ok attached got_slots=N", naming an object whose allocator of its own
 * stays untraced (said once, at attach). */
static void answer_attached(uint64_t slots)
{
	struct mw_out o;

	mw_out_init(&o, out_fd);
	mw_out_str(&o, "ok attached got_slots=");
	mw_out_u64(&o, slots, 0);
	if (mw_got_foreign) {
		mw_out_str(&o, " untraced_allocator_in=");
		mw_out_str(&o, mw_got_foreign_object);
	}
	mw_out_chr(&o, '\n');
	mw_out_flush(&o);
}

static void answer_stats(void)
{
	struct mw_stats st;
	struct mw_out o;
	uint64_t now = mw_monotonic_ns(), rate = 0;

	mw_stats(&st);
	if (last_stats_ns < mw_track_since_ns) {
		/* the first question since tracking (re)started: the rate
		 * since then */
		last_stats_ns = mw_track_since_ns;
		last_stats_allocs = 0;
	}
	if (now > last_stats_ns && st.total_allocations >= last_stats_allocs)
		rate = (st.total_allocations - last_stats_allocs) *
		       1000000000u / (now - last_stats_ns);
	last_stats_ns = now;
	last_stats_allocs = st.total_allocations;

	mw_out_init(&o, out_fd);
	mw_out_str(&o, "ok stats pid=");
	mw_out_u64(&o, (uint64_t)getpid(), 0);
#define KV(k, v) do { mw_out_str(&o, " " k "="); mw_out_u64(&o, (v), 0); } while (0)
	KV("attached_seconds", st.seconds);
	KV("sites", st.sites);
	KV("live_blocks", st.live_blocks);
	KV("live_bytes", st.live_bytes);
	KV("total_bytes", st.total_bytes);
	KV("allocations", st.total_allocations);
	KV("frees", st.total_frees);
	KV("allocations_per_s", rate);
	KV("unknown_frees", st.unknown_frees);
	KV("unknown_freed_bytes", mw_live_unknown_bytes());
	mw_out_str(&o, " net_change_bytes=");
	mw_out_i64(&o, (int64_t)st.live_bytes - (int64_t)mw_live_unknown_bytes());
	KV("dropped", st.dropped);
	KV("got_slots", (uint64_t)mw_got_patched());
	KV("got_foreign", (uint64_t)mw_got_foreign);
	KV("memory_bytes", st.memory_bytes);
	KV("rss_bytes", mw_rss_bytes());
#undef KV
	mw_out_str(&o, " age_unit=");
	mw_out_str(&o, st.age_unit_gc ? "gc_generations" : "ns");
	mw_out_chr(&o, '\n');
	mw_out_flush(&o);
}

/* "progress WHAT DONE/TOTAL UNIT" lines go before a command's answer,
 * so that a front end can show long steps moving. */
struct progress {
	const char *what;	/* "scan", "dump" */
	uint64_t unit;		/* divisor of done/total */
	const char *unit_name;
};

static void report_progress(uint64_t done, uint64_t total, void *arg)
{
	const struct progress *p = arg;
	struct mw_out o;

	mw_out_init(&o, out_fd);
	mw_out_str(&o, "progress ");
	mw_out_str(&o, p->what);
	mw_out_chr(&o, ' ');
	mw_out_u64(&o, done / p->unit, 0);
	mw_out_chr(&o, '/');
	mw_out_u64(&o, total / p->unit, 0);
	mw_out_chr(&o, ' ');
	mw_out_str(&o, p->unit_name);
	mw_out_chr(&o, '\n');
	mw_out_flush(&o);
}

static int write_dump(int fd, void *arg)
{
	return mw_dump_req(fd, arg);
}

/* Adds a dump to @path (appended, as mwrap's dump_path is), through a
 * temporary file renamed over it; @cmd may ask for JSON, --top and
 * --scan (NULL: a plain dump in the attach's format).  Returns 0 or
 * -errno. */
static int dump_to(const char *path, const struct mw_cmd *cmd)
{
	static const struct progress dump_progress = { "dump", 1, "sites" };
	static const struct progress scan_progress = { "scan", 1 << 20, "MiB" };
	struct mw_dump_req req = { opts.dump_min, opts.format, 0, NULL,
				   report_progress, (void *)&dump_progress };
	struct mw_scan scan;
	int ret;

	if (cmd) {
		req.format = cmd->json ? MW_FORMAT_JSON : opts.format;
		req.top = cmd->top;
	}
	if (cmd && cmd->scan) {
		ret = mw_scan_run(&scan, SCAN_BUDGET_MS, report_progress,
				  (void *)&scan_progress);
		if (ret)
			return ret;
		req.scan = &scan;
	}
	ret = mw_safe_replace(path, 1, write_dump, &req);
	if (req.scan)
		mw_scan_free(&scan);
	return ret;
}

/* --- detach ------------------------------------------------------------- */

/* Closes our files; @remove also deletes the runtime directory (a
 * window's end: the front end has what it asked for). */
static void close_files(int remove)
{
	if (ctl_fd >= 0)
		close(ctl_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (ino_fd >= 0)
		close(ino_fd);
	if (efd >= 0)
		close(efd);
	ctl_fd = out_fd = ino_fd = efd = -1;
	if (remove)
		mw_rundir_remove(&rundir);
	else
		mw_rundir_close(&rundir);
}

/* Undoes the attach.  The final dump goes to the dump path, and the
 * runtime directory keeps only it; @discard: no dump, no directory.
 * The files go before the answer: a front end that reads it and
 * attaches again must not find this attach's directory. */
static void undo_attach(int discard)
{
	int restored;
	char num[24];

	__atomic_store_n(&detaching, 1, __ATOMIC_RELEASE);
	mw_track_disable();
	restored = mw_got_restore_all();
	mw_urg_restore();
	if (discard) {
		mw_rundir_remove(&rundir);
	} else {
		dump_to(dump_path, NULL);
		if (rundir.fd >= 0) {
			unlinkat(rundir.fd, "ctl", 0);
			unlinkat(rundir.fd, "out", 0);
		}
		mw_rundir_close(&rundir);
	}
	mw_fmt_u64(num, (uint64_t)restored);
	answer("ok detach restored_slots=", num);
	close_files(0);
}

/* --- control file ------------------------------------------------------- */

static void answer_objects_timeout(void)
{
	char num[24];
	struct mw_out o;

	mw_fmt_u64(num, mw_objects_flagged());
	mw_out_init(&o, out_fd);
	mw_out_str(&o, "error: objects: no Ruby thread reached a safe point "
		       "in time (");
	mw_out_str(&o, num);
	mw_out_str(&o, " idle Ruby threads woken; blocked in C?)\n");
	mw_out_flush(&o);
}

/* A plain name in a command is a file in the runtime directory. */
static int resolve_name(char *path)
{
	if (path[0] == '/' || !path[0])
		return 0;
	if (mw_rundir_join(&rundir, path, named_path, sizeof(named_path)))
		return -ENAMETOOLONG;
	memcpy(path, named_path, strlen(named_path) + 1);
	return 0;
}

/* Runs one command; returns 1 on "detach", 2 on "detach --discard". */
static int run_command(const char *text, size_t len)
{
	struct mw_cmd cmd;
	char err[160];
	int ret;

	if (mw_cmd_parse(text, len, &cmd, err, sizeof(err))) {
		answer("error: ", err);
		return 0;
	}
	if (resolve_name(cmd.path) || resolve_name(cmd.heap_path)) {
		answer("error: ", "name too long");
		return 0;
	}
	switch (cmd.kind) {
	case MW_CMD_DUMP:
		ret = dump_to(cmd.path[0] ? cmd.path : dump_path, &cmd);
		if (ret)
			answer("error: dump failed: ", strerrordesc_np(-ret));
		else
			answer("ok dump ", cmd.path[0] ? cmd.path : dump_path);
		return 0;
	case MW_CMD_RESET:
		mw_track_reset();
		answer("ok reset", "");
		return 0;
	case MW_CMD_STATS:
		answer_stats();
		return 0;
	case MW_CMD_DETACH:
		return cmd.discard ? 2 : 1;
	case MW_CMD_LEASE:
		answer("ok lease", "");
		return 0;
	case MW_CMD_OBJECTS:
		ret = mw_objects_take(cmd.path, cmd.heap_path,
				      OBJECTS_START_MS);
		if (ret == -ENOSYS)
			answer("error: objects: ", "not a Ruby process");
		else if (ret == -ETIMEDOUT)
			answer_objects_timeout();
		else if (ret)
			answer("error: objects: ", strerrordesc_np(-ret));
		else
			answer("ok objects ", cmd.path);
		return 0;
	}
	return 0;
}

/* Reads what was appended to the control file; returns run_command's
 * detach answer, else 0.  Every command renews the lease. */
static int read_commands(void)
{
	char buf[1024];
	struct stat st;
	ssize_t n;

	if (fstat(ctl_fd, &st) == 0 && st.st_size < ctl_off) {
		/* truncated: what is there now is new */
		ctl_off = 0;
		line_len = 0;
		line_too_long = 0;
	}
	while ((n = pread(ctl_fd, buf, sizeof(buf), ctl_off)) > 0) {
		ssize_t i;

		ctl_off += n;
		for (i = 0; i < n; i++) {
			int done = 0;

			if (buf[i] != '\n') {
				if (line_len < MW_CMD_LINE_MAX)
					line[line_len++] = buf[i];
				else
					line_too_long = 1;
				continue;
			}
			if (line_too_long)
				answer("error: ", "command line too long");
			else
				done = run_command(line, line_len);
			line_len = 0;
			line_too_long = 0;
			if (lease_ns)
				lease_end = mw_monotonic_ns() + lease_ns;
			if (done)
				return done;
		}
	}
	return 0;
}

/* --- helper thread ------------------------------------------------------ */

/* The runtime directory with "out" (answers) and "ctl" (commands) in
 * it, both new; the default dump goes there too. */
static int open_control_files(void)
{
	char watch[40];
	size_t n;
	int fd;

	lease_ns = (uint64_t)opts.lease * 1000000000u;
	fd = mw_rundir_make(&rundir);
	if (fd < 0)
		return fd;
	if (opts.dump_path[0])
		memcpy(dump_path, opts.dump_path, sizeof(dump_path));
	else
		mw_rundir_join(&rundir, "dump", dump_path, sizeof(dump_path));
	fd = mw_rundir_create(&rundir, "out", O_WRONLY | O_APPEND);
	if (fd < 0)
		return fd;
	out_fd = fd;
	fd = mw_rundir_create(&rundir, "ctl", O_RDWR);
	if (fd < 0) {
		answer("error: cannot create control file: ", strerrordesc_np(-fd));
		return fd;
	}
	ctl_fd = fd;
	ctl_off = 0;
	line_len = 0;
	line_too_long = 0;
	ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ino_fd >= 0) {
		/* the file itself, not a name someone could swap */
		memcpy(watch, "/proc/self/fd/", 14);
		n = 14 + mw_fmt_u64(watch + 14, (uint64_t)ctl_fd);
		watch[n] = '\0';
		inotify_add_watch(ino_fd, watch, IN_MODIFY | IN_CLOSE_WRITE);
	}
	return 0;
}

/* After a failed start: the front end gets a few seconds to read the
 * error before the directory goes (it writes to ctl when it has). */
static void linger(void)
{
	struct stat st;
	int i;

	for (i = 0; i < 50 && out_fd >= 0 && ctl_fd >= 0; i++) {
		if (fstat(ctl_fd, &st) == 0 && st.st_size > 0)
			break;
		usleep(200000);
	}
}

static void drain(int fd)
{
	char buf[512];

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

/* The target exits while attached: no final dump must be lost. */
static void at_target_exit(void)
{
	if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE) || getpid() != pid_at_attach)
		return;
	mw_tls.guard++;
	mw_track_disable();
	if (lease_ns)	/* a window: its front end reports the exit */
		mw_rundir_remove(&rundir);
	else
		dump_to(dump_path, NULL);
	mw_tls.guard--;
}

static void after_fork_child(void)
{
	if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE))
		return;
	/* The child has no helper: it detaches itself, and never writes to
	 * the parent's files. */
	mw_track_disable();
	mw_got_restore_after_fork();
	mw_urg_restore();
	close_files(0);
	attached = 0;
	detaching = 0;
}

static void *helper_main(void *arg)
{
	int slots_now;
	int ret, done = 0;

	(void)arg;
	mw_tls.guard++;		/* nothing this thread does is traced */
	ret = open_control_files();
	if (ret < 0)
		goto fail;
	ret = mw_sites_init();
	if (ret) {
		/* before anything is hooked: the target runs on untouched */
		answer("error: cannot create the site table (a memory limit?): ",
		       strerrordesc_np(-ret));
		goto fail;
	}
	mw_ruby_init();
	if (!mw_real.dlopen || !mw_real.dlclose) {
		answer("error: ", "cannot find the real dlopen/dlclose");
		goto fail;
	}
	if (!atfork_registered) {
		mw_fork_init(after_fork_child);
		atexit(at_target_exit);	/* we are never unloaded */
		atfork_registered = 1;
	}
	pid_at_attach = getpid();
	mw_sample_bytes = opts.sample;
	mw_track_reset();	/* a new window: also empties the live table */
	ret = mw_urg_install(efd);
	if (ret) {
		answer("error: cannot install the SIGURG handler: ",
		       strerrordesc_np(-ret));
		goto fail;
	}
	mw_heap_init();
	mw_got_set_kinds(MW_GOT_ALLOC | MW_GOT_HEAP);
	mw_track_enable();
	slots_now = mw_got_patch_all();
	answer_attached((uint64_t)slots_now);
	lease_end = mw_monotonic_ns() + lease_ns;

	for (;;) {
		struct pollfd p[2] = { { efd, POLLIN, 0 }, { ino_fd, POLLIN, 0 } };

		poll(p, ino_fd >= 0 ? 2 : 1, 200);
		if (__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE))
			break;
		if (p[0].revents & POLLIN) {
			drain(efd);
			dump_to(dump_path, NULL);
		}
		drain(ino_fd);
		done = read_commands();
		if (done)
			break;
		if (lease_ns && mw_monotonic_ns() > lease_end) {
			done = 2;	/* the front end is gone */
			break;
		}
		mw_urg_check();
		mw_sites_grow_table();
	}
	undo_attach(done == 2);
	__atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&detaching, 0, __ATOMIC_RELEASE);
	mw_tls.guard--;
	return NULL;
fail:
	mw_track_disable();
	mw_got_restore_all();
	mw_urg_restore();
	linger();
	close_files(1);
	__atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
	mw_tls.guard--;
	return NULL;
}

/* --- exported ------------------------------------------------------------ */

EXPORT int mw_attach(const char *options)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int ret, i;

	if (!mw_real_ready())
		return MW_ATTACH_NOT_READY;
	if (__atomic_load_n(&mw_enabled, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&attached, __ATOMIC_RELAXED))
		return MW_ATTACH_PRELOADED;
	/* a detach finishing: a few ms at most (closing files) */
	for (i = 0; i < 2000 && __atomic_load_n(&detaching, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	if (__atomic_exchange_n(&attached, 1, __ATOMIC_ACQ_REL))
		return MW_ATTACH_ALREADY;
	mw_tls.guard++;
	if (mw_options_parse(options, &opts, NULL, 0)) {
		ret = -EINVAL;
		goto out;
	}
	stop_requested = 0;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		ret = -errno;
		goto out;
	}
	/* the helper must never take the application's signals */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&helper, &attr, helper_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		close(efd);
		efd = -1;
	} else {
		pthread_setname_np(helper, "mwrap-helper");
	}
out:
	if (ret)
		__atomic_store_n(&attached, 0, __ATOMIC_RELEASE);
	mw_tls.guard--;
	return ret;
}

EXPORT int mw_detach(void)
{
	uint64_t one = 1;
	int i;

	if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE))
		return -ENOENT;
	__atomic_store_n(&stop_requested, 1, __ATOMIC_RELEASE);
	if (efd >= 0 && write(efd, &one, sizeof(one)) < 0)
		return -errno;
	for (i = 0; i < 5000 && __atomic_load_n(&attached, __ATOMIC_ACQUIRE);
	     i++)
		usleep(1000);
	return __atomic_load_n(&attached, __ATOMIC_ACQUIRE) ? -ETIMEDOUT : 0;
}

/* The GOT patcher points dlopen/dlclose slots here (hidden: exporting
 * them would interpose dlopen for the whole process in preload mode). */
void *mw_hook_dlopen(const char *file, int mode)
{
	void *h = mw_real.dlopen(file, mode);

	if (h && mw_tracking()) {
		mw_tls.guard++;
		mw_got_patch_all();
		mw_tls.guard--;
	}
	return h;
}

int mw_hook_dlclose(void *handle)
{
	int ret = mw_real.dlclose(handle);

	if (mw_tracking()) {
		mw_tls.guard++;
		mw_got_patch_all();	/* prunes the records of unloaded objects */
		mw_tls.guard--;
	}
	return ret;
}
