/* SPDX-License-Identifier: MIT */
/* ctl_server.c - see ctl_server.h */
#define _GNU_SOURCE
#include "control/ctl_server.h"
#include "base/command.h"
#include "base/fmt.h"
#include "base/rundir.h"
#include "base/safefile.h"
#include "base/spin.h"
#include "core/live.h"
#include "core/rbpos.h"
#include "core/track.h"
#include "hook/got.h"
#include "report/dump.h"
#include "report/gc.h"
#include "report/objects.h"
#include "report/rbjob.h"
#include "report/scan.h"
#include "report/stats.h"
#include "common/clock.h"
#include "common/libc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_BUDGET_MS 30000	/* dump --scan reads memory this long at most */
#define OBJECTS_START_MS 5000	/* a Ruby thread must take the job by then */
#define GC_START_MS 5000	/* the same for gc */

/* The server's state: written by mw_ctl_open before the helper serves,
 * then owned by the helper thread, except what mw_ctl_at_exit uses on
 * the exiting thread: opts, dump_path, exit_path, lease_ns (unchanged
 * while attached), lease_end (read atomically) and rundir (under
 * dump_lock). */
static const struct mw_options *opts;
static struct mw_rundir rundir = { -1, "" };
static char dump_path[PATH_MAX];
static char exit_path[PATH_MAX];	/* a window's table at exit */
static char named_path[PATH_MAX];	/* a command's plain name, joined */
static int ctl_fd = -1, out_fd = -1, ino_fd = -1;
static uint64_t lease_ns, lease_end;	/* 0: no lease */
static uint32_t lease_owner;		/* the last "lease PID"'s PID */
static off_t ctl_off;
static char line[MW_CMD_LINE_MAX + 1];
static size_t line_len;
static int line_too_long;
static uint64_t last_stats_ns, last_stats_allocs;
/* Held across each dump to a path: the helper's dumps and the exiting
 * thread's final one (mw_ctl_at_exit) would otherwise write the same
 * temporary name (PATH.tmpPID) at once.  Also held wherever the runtime
 * directory is removed or closed while attached, so that the exiting
 * thread never writes into a directory the helper is removing (a lease
 * that runs out as the process exits). */
static int dump_lock;

static void drain(int fd)
{
	char buf[512];

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

/* --- answers ----------------------------------------------------------- */

void mw_ctl_answer(const char *a, const char *b)
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
void mw_ctl_answer_attached(uint64_t slots)
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
	lease_end = mw_monotonic_ns() + lease_ns;
}

static void answer_stats(void)
{
	struct mw_stats st;
	struct mw_out o;
	uint64_t now = mw_monotonic_ns(), rate = 0;

	mw_stats_collect(&st);
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
	if (lease_ns) {	/* whose window, and how long without a renewal */
		KV("lease_owner", (uint64_t)lease_owner);
		KV("lease_left_ms", lease_end > now ?
				    (lease_end - now) / 1000000u : 0);
	}
#undef KV
	mw_out_str(&o, " age_unit=");
	mw_out_str(&o, st.age_unit_gc ? "gc_generations" : "ns");
	mw_out_str(&o, " ruby_frames=");
	mw_out_str(&o, mw_ruby_frames_how());
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
	struct mw_dump_req req = { opts->dump_min, opts->format, 0, NULL,
				   report_progress, (void *)&dump_progress,
				   false };
	struct mw_scan scan;
	int ret;

	if (cmd) {
		req.format = cmd->json ? MW_FORMAT_JSON : opts->format;
		req.top = cmd->top;
	}
	if (cmd && cmd->scan) {
		ret = mw_scan_run(&scan, SCAN_BUDGET_MS, report_progress,
				  (void *)&scan_progress);
		if (ret)
			return ret;
		req.scan = &scan;
	}
	mw_spin_lock(&dump_lock);
	ret = mw_safe_replace(path, 1, write_dump, &req);
	mw_spin_unlock(&dump_lock);
	if (req.scan)
		mw_scan_free(&scan);
	return ret;
}

/* --- control file ------------------------------------------------------- */

/* "error: WHAT: no Ruby thread reached a safe point ..." */
static void answer_rbjob_timeout(const char *what)
{
	char num[24];
	struct mw_out o;

	mw_fmt_u64(num, mw_rbjob_flagged());
	mw_out_init(&o, out_fd);
	mw_out_str(&o, "error: ");
	mw_out_str(&o, what);
	mw_out_str(&o, ": no Ruby thread reached a safe point in time (");
	mw_out_str(&o, num);
	mw_out_str(&o, " idle Ruby threads woken; blocked in C?)\n");
	mw_out_flush(&o);
}

/* "ok gc us=N live_before=BYTES live_after=BYTES", or why not. */
static void answer_gc(void)
{
	struct mw_gc_result r;
	struct mw_out o;
	int ret = mw_gc_run(GC_START_MS, &r);

	if (ret == -ENOSYS) {
		mw_ctl_answer("error: gc: ", "not a Ruby process");
		return;
	}
	if (ret == -ETIMEDOUT) {
		answer_rbjob_timeout("gc");
		return;
	}
	if (ret == -EIO) {
		mw_ctl_answer("error: gc: ", "GC.start raised");
		return;
	}
	if (ret) {
		mw_ctl_answer("error: gc: ", mw_strerror(-ret));
		return;
	}
	mw_out_init(&o, out_fd);
	mw_out_str(&o, "ok gc us=");
	mw_out_u64(&o, r.ns / 1000u, 0);
	mw_out_str(&o, " live_before=");
	mw_out_u64(&o, r.live_before, 0);
	mw_out_str(&o, " live_after=");
	mw_out_u64(&o, r.live_after, 0);
	mw_out_chr(&o, '\n');
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
		mw_ctl_answer("error: ", err);
		return 0;
	}
	if (resolve_name(cmd.path) || resolve_name(cmd.heap_path)) {
		mw_ctl_answer("error: ", "name too long");
		return 0;
	}
	switch (cmd.kind) {
	case MW_CMD_DUMP:
		ret = dump_to(cmd.path[0] ? cmd.path : dump_path, &cmd);
		if (ret)
			mw_ctl_answer("error: dump failed: ", mw_strerror(-ret));
		else
			mw_ctl_answer("ok dump ", cmd.path[0] ? cmd.path : dump_path);
		return 0;
	case MW_CMD_RESET:
		mw_track_reset();
		mw_ctl_answer("ok reset", "");
		return 0;
	case MW_CMD_STATS:
		answer_stats();
		return 0;
	case MW_CMD_DETACH:
		return cmd.discard ? 2 : 1;
	case MW_CMD_LEASE:
		if (lease_ns)
			lease_end = mw_monotonic_ns() + lease_ns;
		if (cmd.owner)
			lease_owner = cmd.owner;
		mw_ctl_answer("ok lease", "");
		return 0;
	case MW_CMD_OBJECTS:
		ret = mw_objects_take(cmd.path, cmd.heap_path,
				      OBJECTS_START_MS);
		if (ret == -ENOSYS)
			mw_ctl_answer("error: objects: ", "not a Ruby process");
		else if (ret == -ETIMEDOUT)
			answer_rbjob_timeout("objects");
		else if (ret)
			mw_ctl_answer("error: objects: ", mw_strerror(-ret));
		else
			mw_ctl_answer("ok objects ", cmd.path);
		return 0;
	case MW_CMD_GC:
		answer_gc();
		return 0;
	}
	return 0;
}

int mw_ctl_serve(void)
{
	char buf[1024];
	struct stat st;
	ssize_t n;

	drain(ino_fd);
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
			uint64_t t0;
			int done = 0;

			if (buf[i] != '\n') {
				if (line_len < MW_CMD_LINE_MAX)
					line[line_len++] = buf[i];
				else
					line_too_long = 1;
				continue;
			}
			t0 = mw_monotonic_ns();
			if (line_too_long)
				mw_ctl_answer("error: ", "command line too long");
			else
				done = run_command(line, line_len);
			line_len = 0;
			line_too_long = 0;
			/* Only "lease" renews the lease, but the time spent
			 * running a command (a GC, a dump of a big table) is
			 * time the owner's renewals could not be heard. */
			if (lease_ns)
				lease_end += mw_monotonic_ns() - t0;
			if (done)
				return done;
		}
	}
	return 0;
}


int mw_ctl_open(const struct mw_options *o)
{
	char watch[40];
	size_t n;
	int fd;

	opts = o;
	lease_ns = (uint64_t)opts->lease * 1000000000u;
	lease_owner = 0;
	fd = mw_rundir_make(&rundir);
	if (fd < 0)
		return fd;
	if (opts->dump_path[0])
		memcpy(dump_path, opts->dump_path, sizeof(dump_path));
	else
		mw_rundir_join(&rundir, "dump", dump_path, sizeof(dump_path));
	mw_rundir_join(&rundir, MW_CTL_EXIT_DUMP, exit_path, sizeof(exit_path));
	fd = mw_rundir_create(&rundir, "out", O_WRONLY | O_APPEND);
	if (fd < 0)
		return fd;
	out_fd = fd;
	fd = mw_rundir_create(&rundir, "ctl", O_RDWR);
	if (fd < 0) {
		mw_ctl_answer("error: cannot create control file: ", mw_strerror(-fd));
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

void mw_ctl_linger(void)
{
	struct stat st;
	int i;

	for (i = 0; i < 50 && out_fd >= 0 && ctl_fd >= 0; i++) {
		if (fstat(ctl_fd, &st) == 0 && st.st_size > 0)
			break;
		usleep(200000);
	}
}


int mw_ctl_wake_fd(void)
{
	return ino_fd;
}

int mw_ctl_lease_expired(void)
{
	/* the helper writes lease_end; the exiting thread reads it too */
	return lease_ns &&
	       mw_monotonic_ns() > __atomic_load_n(&lease_end, __ATOMIC_RELAXED);
}

int mw_ctl_dump(void)
{
	return dump_to(dump_path, NULL);
}

void mw_ctl_close(int remove)
{
	if (ctl_fd >= 0)
		close(ctl_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (ino_fd >= 0)
		close(ino_fd);
	ctl_fd = out_fd = ino_fd = -1;
	if (remove)
		mw_rundir_remove(&rundir);
	else
		mw_rundir_close(&rundir);
}

/* Leaves the runtime directory holding the dump alone, as a detach does
 * (its path was said at attach), and closes it.  Context: dump_lock
 * held. */
static void leave_dump_locked(void)
{
	if (rundir.fd >= 0) {
		unlinkat(rundir.fd, "ctl", 0);
		unlinkat(rundir.fd, "out", 0);
	}
	mw_rundir_close(&rundir);
}

void mw_ctl_finish(int discard, int restored)
{
	char num[24];

	if (!discard)
		dump_to(dump_path, NULL);
	mw_spin_lock(&dump_lock);
	if (discard)
		mw_rundir_remove(&rundir);
	else
		leave_dump_locked();
	mw_spin_unlock(&dump_lock);
	mw_fmt_u64(num, (uint64_t)restored);
	mw_ctl_answer("ok detach restored_slots=", num);
	mw_ctl_close(0);
}

void mw_ctl_at_exit(void)
{
	struct mw_dump_req req = { opts->dump_min, MW_FORMAT_JSON, 0, NULL,
				   NULL, NULL, true };

	if (!lease_ns) {	/* --keep: the dump where the attach said */
		dump_to(dump_path, NULL);
		mw_spin_lock(&dump_lock);
		leave_dump_locked();
		mw_spin_unlock(&dump_lock);
		return;
	}
	/* A window: the final table for its front end, which reports it and
	 * removes the directory; if the front end is gone too (its lease
	 * ran out), or the table cannot be written, nothing is left. */
	mw_spin_lock(&dump_lock);
	if (rundir.fd >= 0 && (mw_ctl_lease_expired() ||
			       mw_safe_replace(exit_path, 0, write_dump, &req)))
		mw_rundir_remove(&rundir);
	mw_spin_unlock(&dump_lock);
}
