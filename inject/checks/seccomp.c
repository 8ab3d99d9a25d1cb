/* SPDX-License-Identifier: MIT */
/* seccomp.c - judge a target's seccomp filter on the syscalls an attach
 * makes in it (see seccomp.h).
 *
 * Two ways to know what the filter does:
 *  - read: PTRACE_SECCOMP_GET_FILTER gives each classic BPF program of
 *    the chain, evaluated (bpfeval.c) for each of our syscalls with the
 *    arguments and instruction pointer unknown (every branch that
 *    depends on them is followed: the worst result counts);
 *  - probe: where the kernel will not give the programs (no
 *    CAP_SYS_ADMIN, or we run under a filter ourselves: a container),
 *    a target in our own container with as many filters as we have
 *    runs under the chain the runtime gave us both, so each syscall is
 *    made in a child of ours, harmlessly (scprobe.c), and what happens
 *    to the child is what would happen to the target.  A debug sidecar
 *    (another container sharing the target's pid namespace) cannot
 *    show that its chain is the target's: the caller vouches for it
 *    (mwrap-attach --same-seccomp), and only the count is checked.
 */
#define _GNU_SOURCE
#include "checks/seccomp.h"
#include "checks/bpfeval.h"
#include "checks/scprobe.h"
#include "process/syscalls.h"
#include "common/libc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

#define MAX_CALLS MWI_SC_MAX_CALLS

static const char *const action_name[] = {
	"kill", "trap", "errno", "notify", "allow"
};

/* --- /proc --------------------------------------------------------------- */

/* The Seccomp: and Seccomp_filters: fields of a status file: 0, or
 * -errno. */
static int seccomp_status(const char *path, int *mode, int *filters)
{
	char buf[4096];
	ssize_t n;
	char *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	*mode = 0;
	*filters = -1;	/* kernels before 5.9 do not say */
	p = strstr(buf, "\nSeccomp:");
	if (p)
		*mode = atoi(p + 9);
	p = strstr(buf, "\nSeccomp_filters:");
	if (p)
		*filters = atoi(p + 17);
	return 0;
}

/* Thread ids of @pid, at most @max. */
static int threads(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max)
		if (atoi(e->d_name) > 0)
			tids[n++] = (pid_t)atoi(e->d_name);
	closedir(d);
	return n;
}

static int same_link(const char *a, const char *b)
{
	char la[128], lb[128];
	ssize_t na = readlink(a, la, sizeof(la) - 1);
	ssize_t nb = readlink(b, lb, sizeof(lb) - 1);

	return na > 0 && na == nb && !memcmp(la, lb, (size_t)na);
}

/* 1 when process @pid is in our namespace of type @ns ("pid", "mnt"). */
static int same_ns(pid_t pid, const char *ns)
{
	char mine[32], its[64];

	snprintf(mine, sizeof(mine), "/proc/self/ns/%s", ns);
	snprintf(its, sizeof(its), "/proc/%d/ns/%s", (int)pid, ns);
	return same_link(mine, its);
}

/* 1 when process @pid is in our container: the same pid and mount
 * namespaces, so that its filters and ours came from one runtime's
 * chain (each filter added since shows in the count). */
static int same_container(pid_t pid)
{
	return same_ns(pid, "pid") && same_ns(pid, "mnt");
}

/* --- reading the filter -------------------------------------------------- */

#define MAX_FILTERS 16
#define MAX_INSNS 4096

struct chain {
	int n;
	unsigned short len[MAX_FILTERS];
	struct sock_filter *prog[MAX_FILTERS];
};

static void chain_free(struct chain *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->prog[i]);
	c->n = 0;
}

/* Reads thread @tid's filters, stopping it for as long as that takes
 * (PTRACE_INTERRUPT: a stop, no code of ours in it).  0, or -errno:
 * -EACCES/-EPERM when the kernel will not show them to us. */
static int read_chain(pid_t tid, struct chain *c)
{
	int status, sig = 0, ret = 0;
	long n;

	memset(c, 0, sizeof(*c));
	if (ptrace(PTRACE_SEIZE, tid, 0, 0))
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0)) {
		ret = -errno;
		goto out;
	}
	if (waitpid(tid, &status, __WALL) < 0) {
		ret = -errno;
		goto out;
	}
	if (!WIFSTOPPED(status))
		return -ESRCH;	/* it exited meanwhile */
	/* a signal's delivery stop came first: hand it back at detach */
	if (status >> 16 == 0 && WSTOPSIG(status) != SIGTRAP)
		sig = WSTOPSIG(status);
	for (c->n = 0; c->n < MAX_FILTERS; c->n++) {
		n = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, c->n, NULL);
		if (n < 0) {
			if (errno != ENOENT)
				ret = -errno;
			break;
		}
		if (n == 0 || n > MAX_INSNS) {
			ret = -E2BIG;
			break;
		}
		c->prog[c->n] = calloc((size_t)n, sizeof(struct sock_filter));
		if (!c->prog[c->n]) {
			ret = -ENOMEM;
			break;
		}
		c->len[c->n] = (unsigned short)n;
		if (ptrace(PTRACE_SECCOMP_GET_FILTER, tid, c->n,
			   c->prog[c->n]) != n) {
			ret = -errno ? -errno : -EIO;
			free(c->prog[c->n]);
			break;
		}
	}
	if (c->n == MAX_FILTERS)
		ret = -E2BIG;
out:
	ptrace(PTRACE_DETACH, tid, 0, (void *)(long)sig);
	if (ret)
		chain_free(c);
	return ret;
}

static int same_chain(const struct chain *a, const struct chain *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->len[i] != b->len[i] ||
		    memcmp(a->prog[i], b->prog[i],
			   a->len[i] * sizeof(struct sock_filter)))
			return 0;
	return 1;
}

/* What a whole chain does with each listed syscall: the worst of its
 * programs (the kernel acts on the most severe result). */
static void judge_chain(const struct chain *c, struct mwi_sc_result *res)
{
	const struct mwi_sc_call *call;
	struct mwi_sc_result r;
	int i, j;

	for (i = 0, call = mwi_sc_calls; call->name; call++, i++) {
		res[i] = (struct mwi_sc_result){ MWI_SC_ALLOW, 0, 0, 0 };
		for (j = 0; j < c->n; j++) {
			mwi_bpf_evaluate(c->prog[j], c->len[j], call->nr, &r);
			mwi_sc_worse(&res[i], &r, j == 0);
		}
	}
}


/* --- the verdict --------------------------------------------------------- */

static const char *how(const struct mwi_sc_result *r, char *buf, size_t len)
{
	if (r->action != MWI_SC_ERRNO)
		snprintf(buf, len, "%s", action_name[r->action]);
	else
		snprintf(buf, len, "errno=%s", mw_strerrorname(r->err) ?
			 mw_strerrorname(r->err) : "?");
	return buf;
}

/* clone3's ENOSYS sends glibc to clone: then clone must run. */
static int clone_ok(const struct mwi_sc_call *calls,
		    const struct mwi_sc_result *res)
{
	for (int i = 0; calls[i].name; i++)
		if (calls[i].nr == SYS_clone)
			return res[i].action == MWI_SC_ALLOW;
	return 0;
}

static const char *effect(const struct mwi_sc_result *r,
			  const struct mwi_sc_call *call)
{
	if (r->action == MWI_SC_ALLOW)
		return "-";
	if (r->action <= MWI_SC_TRAP)
		return "the target would die";
	if (r->action == MWI_SC_NOTIFY)
		return "a supervisor runs it or fails it";
	if (call->nr == SYS_clone3 && r->err == ENOSYS &&
	    call->need == MWI_SC_REQUIRED)
		return "glibc falls back to clone";
	return call->effect;
}

/* The seccomp mode and filter count of @pid's threads, the worst of
 * them (each thread has its own chain), and the threads in @tids (at
 * most @cap).  The number of threads, or -errno. */
static int worst_status(pid_t pid, int *mode, int *filters, pid_t *tids,
			int cap)
{
	char path[64];
	int ntids, i, ret;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ret = seccomp_status(path, mode, filters);
	if (ret)
		return ret;
	ntids = threads(pid, tids, cap);
	for (i = 0; i < ntids; i++) {
		int m, f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
			 (int)pid, (int)tids[i]);
		if (seccomp_status(path, &m, &f))
			continue;	/* ended meanwhile */
		if (m > *mode)
			*mode = m;
		if (f > *filters)
			*filters = f;
	}
	return ntids;
}

/* 1. Reads each filtered thread's chain and judges it into @res (the
 * worst of the chains).  0, or -errno when a chain cannot be read. */
static int read_chains(pid_t pid, const pid_t *tids, int ntids,
		       struct mwi_sc_result *res, FILE *out, int verbose)
{
	static struct mwi_sc_result other[MAX_CALLS];
	char path[64];
	struct chain first, c;
	int i, ret = 0;

	for (i = 0; mwi_sc_calls[i].name; i++)
		res[i] = (struct mwi_sc_result){ MWI_SC_ALLOW, 0, 0, 0 };
	first.n = 0;
	for (i = 0; i < ntids && !ret; i++) {
		int m, f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
			 (int)pid, (int)tids[i]);
		if (seccomp_status(path, &m, &f) || m == 0)
			continue;	/* ended, or unfiltered: allows all */
		ret = read_chain(tids[i], &c);
		if (ret == -ESRCH) {
			ret = 0;
			continue;
		}
		if (ret)
			break;
		if (first.n && same_chain(&first, &c)) {
			chain_free(&c);
			continue;
		}
		judge_chain(&c, first.n ? other : res);
		if (first.n) {
			for (int j = 0; mwi_sc_calls[j].name; j++)
				mwi_sc_worse(&res[j], &other[j], 0);
			chain_free(&c);
		} else {
			first = c;
		}
		if (verbose)
			fprintf(out, "# thread %d: %d filters read\n",
				(int)tids[i], c.n);
	}
	chain_free(&first);
	return ret;
}

/* 2. The chain could not be read: when it is ours (our container's, or
 * vouched for), probes ours in a child into @res.  The source ("probed",
 * "vouched"), or NULL with the "unknown" verdict printed. */
static const char *probe_ours(pid_t pid, int filters, int same_as_ours,
			      struct mwi_sc_result *res, FILE *out)
{
	const char *source;
	int my_mode, my_filters, ours, ret;

	ret = seccomp_status("/proc/self/status", &my_mode, &my_filters);
	ours = !ret && my_mode == 2 && my_filters == filters && filters > 0;
	if (ours && same_container(pid)) {
		source = "probed";
	} else if (ours && same_as_ours) {
		source = "vouched";
	} else {
		fprintf(out, "verdict unknown unreadable: the filter cannot be "
			"read (%s) and is not shown to be ours (we have %d "
			"filters, it has %d%s)\n",
			geteuid() ? "not root" : "we run under a filter, or "
			"lack CAP_SYS_ADMIN",
			my_mode == 2 ? my_filters : 0, filters,
			same_ns(pid, "pid") && !same_ns(pid, "mnt") ?
			"; we share its pid namespace, not its mount "
			"namespace: a sidecar" : "");
		return NULL;
	}
	ret = mwi_sc_probe_all(res);
	if (ret) {
		fprintf(out, "verdict unknown probe: probing failed: %s\n",
			strerror(-ret));
		return NULL;
	}
	return source;
}

/* 3. Each syscall's line, then the verdict from @res (found by
 * @source), with the needs the target's libc decides (syscalls.h).
 * 0 (ok, degraded), 1 (refuse) or 2 (unknown). */
static int verdict(pid_t pid, const struct mwi_sc_result *res,
		   const char *source, FILE *out)
{
	const struct mwi_sc_call *call, *calls = mwi_sc_calls_for(pid);
	const char *why = "";
	char word[32];
	int i, refuse = 0, degraded = 0, unknown = 0, bad_i = 0;

	for (i = 0, call = calls; call->name; call++, i++) {
		const struct mwi_sc_result *r = &res[i];
		int bad = r->action <= MWI_SC_TRAP ||
			  (r->action == MWI_SC_ERRNO &&
			   call->need == MWI_SC_REQUIRED &&
			   !(call->nr == SYS_clone3 && r->err == ENOSYS &&
			     clone_ok(calls, res)));

		fprintf(out, "syscall %s %d %s %s%s (%s): %s\n", call->name,
			call->nr, how(r, word, sizeof(word)),
			mwi_sc_need_name(call->need),
			r->varies ? " varies" : "",
			call->user, effect(r, call));
		if (r->unknown)
			unknown = 1;
		if (call->need == MWI_SC_FEATURE && r->action != MWI_SC_ALLOW) {
			degraded = 1;
			continue;
		}
		if (bad && !refuse) {
			refuse = 1;
			why = call->name;
			bad_i = i;
		} else if (r->action != MWI_SC_ALLOW) {
			degraded = 1;
		}
	}
	if (refuse) {
		fprintf(out, "verdict refuse %s: %s %s\n", source, why,
			how(&res[bad_i], word, sizeof(word)));
		return 1;
	}
	if (unknown) {
		fprintf(out, "verdict unknown %s: the filter is too complex to "
			"evaluate\n", source);
		return 2;
	}
	fprintf(out, "verdict %s %s: -\n", degraded ? "degraded" : "ok",
		source);
	return 0;
}

int mwi_sc_check(pid_t pid, FILE *out, int verbose, int same_as_ours)
{
	static struct mwi_sc_result res[MAX_CALLS];
	const char *source = "read";
	pid_t tids[1024];
	int mode, filters, ntids, ret;

	ntids = worst_status(pid, &mode, &filters, tids, 1024);
	if (ntids < 0)
		return ntids;
	fprintf(out, "seccomp mode=%d filters=%d threads=%d\n", mode, filters,
		ntids);
	if (mode == 0) {
		fprintf(out, "verdict ok none: no seccomp filter\n");
		return 0;
	}
	if (mode == 1) {
		fprintf(out, "verdict refuse strict: seccomp strict mode allows "
			"only read, write, exit and sigreturn\n");
		return 1;
	}
	ret = read_chains(pid, tids, ntids, res, out, verbose);
	if (ret) {
		if (verbose)
			fprintf(out, "# PTRACE_SECCOMP_GET_FILTER: %s\n",
				strerror(-ret));
		source = probe_ours(pid, filters, same_as_ours, res, out);
		if (!source)
			return 2;
	}
	return verdict(pid, res, source, out);
}

