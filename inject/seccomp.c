/* seccomp.c - judge a target's seccomp filter on the syscalls an attach
 * makes in it (see seccomp.h).
 *
 * Two ways to know what the filter does:
 *  - read: PTRACE_SECCOMP_GET_FILTER gives each classic BPF program of
 *    the chain, evaluated here for each of our syscalls with the
 *    arguments and instruction pointer unknown (every branch that
 *    depends on them is followed: the worst result counts);
 *  - probe: where the kernel will not give the programs (no
 *    CAP_SYS_ADMIN, or we run under a filter ourselves: a container),
 *    a target in our own container with as many filters as we have
 *    runs under the chain the runtime gave us both, so each syscall is
 *    made in a child of ours, harmlessly, and what happens to the child
 *    is what would happen to the target.
 */
#define _GNU_SOURCE
#include "seccomp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SC_ARCH AUDIT_ARCH_X86_64
#else
#error "seccomp.c: only x86_64 syscall numbers are listed"
#endif

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif

#define MAX_CALLS MWI_SC_MAX_CALLS

static const char *const action_name[] = {
	"kill", "trap", "errno", "notify", "allow"
};

/* --- what the kernel would do: one result per syscall -------------------- */

struct result {
	enum mwi_sc_action action;	/* the worst reachable */
	int err;			/* for MWI_SC_ERRNO */
	int varies;			/* another result is reachable too */
	int unknown;			/* too many paths, or a bad program */
};

/* A filter's return value as the kernel acts on it. */
static void classify(uint32_t ret, struct result *r)
{
	uint32_t act = ret & SECCOMP_RET_ACTION_FULL;

	r->err = 0;
	switch (act) {
	case SECCOMP_RET_ALLOW:
	case SECCOMP_RET_LOG:
		r->action = MWI_SC_ALLOW;
		break;
	case SECCOMP_RET_ERRNO:
		r->action = MWI_SC_ERRNO;
		r->err = (int)(ret & SECCOMP_RET_DATA);
		if (r->err > 4095)
			r->err = 4095;
		break;
	case SECCOMP_RET_TRACE:		/* no seccomp tracer: ENOSYS */
		r->action = MWI_SC_ERRNO;
		r->err = ENOSYS;
		break;
	case SECCOMP_RET_USER_NOTIF:	/* a supervisor answers */
		r->action = MWI_SC_NOTIFY;
		break;
	case SECCOMP_RET_TRAP:
		r->action = MWI_SC_TRAP;
		break;
	default:	/* KILL_PROCESS, KILL_THREAD, and what the kernel
			 * does not know, which it treats as KILL_PROCESS */
		r->action = MWI_SC_KILL;
		break;
	}
}

/* Keeps the worse of @r and @n in @r. */
static void worse(struct result *r, const struct result *n, int first)
{
	if (first) {
		*r = *n;
		return;
	}
	if (n->action != r->action || n->err != r->err)
		r->varies = 1;
	r->unknown |= n->unknown;
	if (n->action < r->action) {
		r->action = n->action;
		r->err = n->err;
	}
}

/* --- classic BPF, with what is not known followed both ways ------------ */

struct word {
	uint32_t v;
	int known;
};

struct bpf_state {
	struct word a, x, m[BPF_MEMWORDS];
};

struct walk {
	const struct sock_filter *f;
	unsigned int len;
	int nr;
	long paths;		/* results reached so far */
	struct result r;
};

#define MAX_PATHS 65536

static void reach(struct walk *w, struct word ret)
{
	struct result n = { 0 };

	if (!ret.known) {	/* RET A with A unknown: anything */
		n.action = MWI_SC_KILL;
		n.unknown = 1;
	} else {
		classify(ret.v, &n);
	}
	worse(&w->r, &n, w->paths++ == 0);
}

/* seccomp_data as the kernel fills it for our syscall: nr and arch are
 * known, the instruction pointer and the arguments are not. */
static struct word load(const struct walk *w, uint32_t k)
{
	struct word v = { 0, 0 };

	if (k == offsetof(struct seccomp_data, nr)) {
		v.v = (uint32_t)w->nr;
		v.known = 1;
	} else if (k == offsetof(struct seccomp_data, arch)) {
		v.v = SC_ARCH;
		v.known = 1;
	}
	return v;
}

static struct word alu(uint16_t op, struct word a, struct word b, int *div0)
{
	struct word r = { 0, a.known && b.known };

	*div0 = 0;
	if (op == BPF_NEG) {
		r.known = a.known;
		r.v = -a.v;
		return r;
	}
	if ((op == BPF_DIV || op == BPF_MOD) && b.known && b.v == 0) {
		*div0 = 1;	/* the program returns 0: KILL_THREAD */
		return r;
	}
	/* x & 0 and x << 32 are known whatever x is */
	if (op == BPF_AND && ((a.known && !a.v) || (b.known && !b.v))) {
		r.known = 1;
		r.v = 0;
		return r;
	}
	if (!r.known)
		return r;
	switch (op) {
	case BPF_ADD: r.v = a.v + b.v; break;
	case BPF_SUB: r.v = a.v - b.v; break;
	case BPF_MUL: r.v = a.v * b.v; break;
	case BPF_DIV: r.v = a.v / b.v; break;
	case BPF_MOD: r.v = a.v % b.v; break;
	case BPF_OR: r.v = a.v | b.v; break;
	case BPF_AND: r.v = a.v & b.v; break;
	case BPF_XOR: r.v = a.v ^ b.v; break;
	case BPF_LSH: r.v = b.v >= 32 ? 0 : a.v << b.v; break;
	case BPF_RSH: r.v = b.v >= 32 ? 0 : a.v >> b.v; break;
	default: r.known = 0; break;
	}
	return r;
}

/* Follows the program from @pc; -1 when it cannot be judged. */
static int run(struct walk *w, unsigned int pc, struct bpf_state s)
{
	const struct sock_filter *in;
	struct word k, src;
	int div0, taken;

	for (; pc < w->len; pc++) {
		if (w->paths >= MAX_PATHS)
			return -1;
		in = &w->f[pc];
		k.v = in->k;
		k.known = 1;
		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
			if (in->code == (BPF_LD | BPF_W | BPF_ABS))
				s.a = load(w, in->k);
			else if (in->code == (BPF_LD | BPF_W | BPF_LEN))
				s.a = (struct word){ sizeof(struct seccomp_data), 1 };
			else if (in->code == (BPF_LD | BPF_IMM))
				s.a = k;
			else if (in->code == (BPF_LD | BPF_MEM) &&
				 in->k < BPF_MEMWORDS)
				s.a = s.m[in->k];
			else
				return -1;
			break;
		case BPF_LDX:
			if (in->code == (BPF_LDX | BPF_W | BPF_LEN))
				s.x = (struct word){ sizeof(struct seccomp_data), 1 };
			else if (in->code == (BPF_LDX | BPF_IMM))
				s.x = k;
			else if (in->code == (BPF_LDX | BPF_MEM) &&
				 in->k < BPF_MEMWORDS)
				s.x = s.m[in->k];
			else
				return -1;
			break;
		case BPF_ST:
		case BPF_STX:
			if (in->k >= BPF_MEMWORDS)
				return -1;
			s.m[in->k] = BPF_CLASS(in->code) == BPF_ST ? s.a : s.x;
			break;
		case BPF_ALU:
			src = BPF_SRC(in->code) == BPF_X ? s.x : k;
			s.a = alu(BPF_OP(in->code), s.a, src, &div0);
			if (div0) {
				reach(w, (struct word){ 0, 1 });
				return 0;
			}
			break;
		case BPF_JMP:
			if (BPF_OP(in->code) == BPF_JA) {
				pc += in->k;
				break;
			}
			src = BPF_SRC(in->code) == BPF_X ? s.x : k;
			if (!s.a.known || !src.known) {
				/* depends on what we do not know: both ways */
				if (run(w, pc + 1 + in->jt, s))
					return -1;
				pc += in->jf;
				break;
			}
			switch (BPF_OP(in->code)) {
			case BPF_JEQ: taken = s.a.v == src.v; break;
			case BPF_JGT: taken = s.a.v > src.v; break;
			case BPF_JGE: taken = s.a.v >= src.v; break;
			case BPF_JSET: taken = (s.a.v & src.v) != 0; break;
			default: return -1;
			}
			pc += taken ? in->jt : in->jf;
			break;
		case BPF_RET:
			reach(w, BPF_RVAL(in->code) == BPF_A ? s.a : k);
			return 0;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				s.x = s.a;
			else
				s.a = s.x;
			break;
		default:
			return -1;
		}
	}
	return -1;	/* fell off the end: the kernel never loads that */
}

/* What one program does with syscall @nr. */
static void evaluate(const struct sock_filter *f, unsigned int len, int nr,
		     struct result *r)
{
	struct walk w = { f, len, nr, 0, { 0 } };
	struct bpf_state s;

	memset(&s, 0, sizeof(s));
	/* the kernel zeroes A, X and M[] before a program runs */
	s.a.known = s.x.known = 1;
	for (int i = 0; i < BPF_MEMWORDS; i++)
		s.m[i].known = 1;
	if (run(&w, 0, s) || w.paths == 0) {
		memset(r, 0, sizeof(*r));
		r->action = MWI_SC_KILL;
		r->unknown = 1;
		return;
	}
	*r = w.r;
}

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
static void judge_chain(const struct chain *c, struct result *res)
{
	const struct mwi_sc_call *call;
	struct result r;
	int i, j;

	for (i = 0, call = mwi_sc_calls; call->name; call++, i++) {
		res[i] = (struct result){ MWI_SC_ALLOW, 0, 0, 0 };
		for (j = 0; j < c->n; j++) {
			evaluate(c->prog[j], c->len[j], call->nr, &r);
			worse(&res[i], &r, j == 0);
		}
	}
}

/* --- probing in a child of ours ------------------------------------------ */

static long sys_result(long r)
{
	return r < 0 ? -errno : 0;
}

/* One probe per listed syscall, in the child: 0 when the syscall ran
 * (or failed the way it does when allowed), else the errno it got. */
static long probe(int nr)
{
	static char page_buf[64];
	char buf[256];
	struct iovec local = { buf, 8 }, remote = { page_buf, 8 };
	struct timespec zero = { 0, 0 };
	stack_t ss;
	sigset_t set;
	struct stat st;
	uint32_t word = 0;
	void *m;
	long r;

	switch (nr) {
	case SYS_read:
	case SYS_write:
	case SYS_close:
	case SYS_pread64:
	case SYS_fstat:
	case SYS_lseek:
	case SYS_getdents64:
	case SYS_ftruncate:
	case SYS_inotify_add_watch:
		/* on a closed fd: EBADF when the syscall runs */
		errno = 0;
		if (nr == SYS_fstat)
			r = syscall(nr, -1, &st);
		else if (nr == SYS_inotify_add_watch)
			r = syscall(nr, -1, "/", 0x4);
		else
			r = syscall(nr, -1, buf, 0, 0);
		return r < 0 && errno != EBADF ? -errno : 0;
	case SYS_openat:
		r = syscall(nr, AT_FDCWD, "/", O_RDONLY | O_DIRECTORY |
			    O_CLOEXEC);
		if (r >= 0)
			close((int)r);
		return sys_result(r);
	case SYS_newfstatat:
		return sys_result(syscall(nr, AT_FDCWD, "/", &st, 0));
	case SYS_mmap:
	case SYS_mprotect:
	case SYS_munmap:
	case SYS_madvise:
		m = (void *)syscall(SYS_mmap, NULL, 4096,
				    PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (nr == SYS_mmap || m == MAP_FAILED)
			return m == MAP_FAILED ? -errno : 0;
		if (nr == SYS_mprotect)
			r = syscall(nr, m, 4096, PROT_READ);
		else if (nr == SYS_madvise)
			r = syscall(nr, m, 4096, MADV_DONTNEED);
		else
			r = syscall(nr, m, 4096);
		return sys_result(r);
	case SYS_brk:
		return syscall(nr, 0) == 0 ? -ENOMEM : 0;
	case SYS_futex:
		return sys_result(syscall(nr, &word, FUTEX_WAKE_PRIVATE, 1,
					  NULL, NULL, 0));
	case SYS_rt_sigaction:
		return sys_result(syscall(nr, SIGURG, NULL, buf, 8));
	case SYS_rt_sigprocmask:
		return sys_result(syscall(nr, SIG_BLOCK, NULL, &set, 8));
	case SYS_sigaltstack:
		return sys_result(syscall(nr, NULL, &ss));
	case SYS_clone3:
		/* a size below the first version: EINVAL when it runs */
		errno = 0;
		r = syscall(nr, NULL, 0);
		return r < 0 && errno != EINVAL ? -errno : 0;
	case SYS_clone:
		/* CLONE_THREAD without CLONE_SIGHAND: EINVAL, no thread */
		errno = 0;
		r = syscall(nr, CLONE_THREAD, NULL, NULL, NULL, 0);
		return r < 0 && errno != EINVAL ? -errno : 0;
	case SYS_set_robust_list:
	case SYS_rseq:
		/* a wrong length: EINVAL when it runs */
		errno = 0;
		r = syscall(nr, NULL, 1, 0, 0);
		return r < 0 && errno != EINVAL ? -errno : 0;
	case SYS_eventfd2:
	case SYS_inotify_init1:
		if (nr == SYS_eventfd2)
			r = syscall(nr, 0, O_CLOEXEC);
		else
			r = syscall(nr, O_CLOEXEC);
		if (r >= 0)
			close((int)r);
		return sys_result(r);
	case SYS_poll:
		return sys_result(syscall(nr, NULL, 0, 0));
	case -1:
		/* ENOSYS when nothing filters it */
		errno = 0;
		r = syscall(-1L);
		return r < 0 && errno != ENOSYS ? -errno : 0;
	case SYS_restart_syscall:
		/* nothing to restart: EINTR when it runs */
		errno = 0;
		r = syscall(nr);
		return r < 0 && errno != EINTR ? -errno : 0;
	case SYS_membarrier:
		return sys_result(syscall(nr, MEMBARRIER_CMD_QUERY, 0, 0));
	case SYS_getpid:
	case SYS_getuid:
	case SYS_gettid:
	case SYS_geteuid:
		return sys_result(syscall(nr));
	case SYS_getrlimit:
		return sys_result(syscall(nr, RLIMIT_AS, buf));
	case SYS_readlink:
		return sys_result(syscall(nr, "/proc/self/exe", buf,
					  sizeof(buf)));
	case SYS_rename:
	case SYS_unlink:
	case SYS_mkdir:
	case SYS_rmdir:
		/* names that do not exist: ENOENT when it runs */
		errno = 0;
		if (nr == SYS_mkdir)
			r = syscall(nr, "/nonexistent/mwrap-probe", 0700);
		else
			r = syscall(nr, "/nonexistent/mwrap-probe",
				    "/nonexistent/mwrap-probe2");
		return r < 0 && errno != ENOENT ? -errno : 0;
	case SYS_unlinkat:
		errno = 0;
		r = syscall(nr, AT_FDCWD, "/nonexistent/mwrap-probe", 0);
		return r < 0 && errno != ENOENT ? -errno : 0;
	case SYS_getrandom:
		return sys_result(syscall(nr, buf, 1, GRND_NONBLOCK));
	case SYS_clock_nanosleep:
		return -(long)syscall(nr, CLOCK_MONOTONIC, 0, &zero, NULL);
	case SYS_nanosleep:
		return sys_result(syscall(nr, &zero, NULL));
	case SYS_tgkill:
		return sys_result(syscall(nr, getpid(), getpid(), 0));
	case SYS_rt_tgsigqueueinfo: {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		return sys_result(syscall(nr, getpid(), getpid(), 0, &si));
	}
	case SYS_process_vm_readv:
		return sys_result(syscall(nr, getpid(), &local, 1, &remote, 1,
					  0));
	default:	/* rt_sigreturn, exit: probed by probe_child */
		return 0;
	}
}

/* Records: 'S' i (about to probe i), 'R' i err, 'T' nr (trapped). */
struct rec {
	char kind;
	int i;
	long err;
};

static int rec_fd = -1;
static volatile int probing = -1;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	struct rec r = { 'T', probing, 0 };

	(void)sig;
	(void)uc;
	r.err = si->si_syscall;
	(void)!write(rec_fd, &r, sizeof(r));
	_exit(3);
}

static void on_urg(int sig)
{
	(void)sig;
}

static void put(char kind, int i, long err)
{
	struct rec r = { kind, i, err };

	(void)!write(rec_fd, &r, sizeof(r));
}

/* The child: probes from index @from on, exit last (it ends us). */
static void probe_child(int from)
{
	struct rlimit none = { 0, 0 };
	struct sigaction sa;
	int i, exit_i = -1;

	setrlimit(RLIMIT_CORE, &none);	/* a killed probe leaves no core */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	for (i = from; mwi_sc_calls[i].name; i++) {
		if (mwi_sc_calls[i].nr == SYS_exit) {
			exit_i = i;
			continue;
		}
		probing = i;
		put('S', i, 0);
		if (mwi_sc_calls[i].nr == SYS_rt_sigreturn) {
			/* the handler's return is the probe */
			sa.sa_handler = on_urg;
			sa.sa_flags = 0;
			sigaction(SIGURG, &sa, NULL);
			raise(SIGURG);
			put('R', i, 0);
			continue;
		}
		put('R', i, probe(mwi_sc_calls[i].nr));
	}
	if (exit_i >= 0) {
		probing = exit_i;
		put('S', exit_i, 0);
		syscall(SYS_exit, 0);
		put('R', exit_i, -errno);
	}
	_exit(0);
}

/* Probes every listed syscall in children of ours; a child killed by
 * one is replaced by another that goes on after it.  0 or -errno. */
static int probe_all(struct result *res)
{
	int from = 0, fds[2], status, started, n, i;
	struct rec r;
	pid_t child;

	for (i = 0; mwi_sc_calls[i].name; i++)
		res[i] = (struct result){ MWI_SC_ALLOW, 0, 0, 1 };
	while (mwi_sc_calls[from].name) {
		if (pipe2(fds, O_CLOEXEC))
			return -errno;
		fflush(NULL);
		child = fork();
		if (child < 0) {
			close(fds[0]);
			close(fds[1]);
			return -errno;
		}
		if (child == 0) {
			close(fds[0]);
			rec_fd = fds[1];
			probe_child(from);
		}
		close(fds[1]);
		started = -1;
		while ((n = (int)read(fds[0], &r, sizeof(r))) == sizeof(r)) {
			if (r.kind == 'S') {
				started = r.i;
			} else if (r.kind == 'R') {
				res[r.i].unknown = 0;
				if (r.err) {
					res[r.i].action = MWI_SC_ERRNO;
					res[r.i].err = (int)-r.err;
				}
				started = -1;
			} else if (r.kind == 'T' && r.i >= 0) {
				res[r.i].action = MWI_SC_TRAP;
				res[r.i].unknown = 0;
				started = r.i;
			}
		}
		close(fds[0]);
		if (waitpid(child, &status, 0) < 0)
			return -errno;
		if (started < 0 && !(WIFEXITED(status) &&
				     WEXITSTATUS(status) == 0))
			return -EPROTO;	/* died outside any probe */
		if (started < 0)
			break;
		/* the last one started never returned */
		res[started].unknown = 0;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
			res[started].action = MWI_SC_KILL;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			 mwi_sc_calls[started].nr == SYS_exit)
			res[started].action = MWI_SC_ALLOW;
		else if (res[started].action != MWI_SC_TRAP) {
			res[started].action = MWI_SC_ERRNO;	/* it broke */
			res[started].err = EFAULT;
		}
		if (mwi_sc_calls[started].nr == SYS_exit)
			break;
		from = started + 1;
	}
	return 0;
}

/* --- the verdict --------------------------------------------------------- */

static const char *how(const struct result *r, char *buf, size_t len)
{
	if (r->action != MWI_SC_ERRNO)
		snprintf(buf, len, "%s", action_name[r->action]);
	else
		snprintf(buf, len, "errno=%s", strerrorname_np(r->err) ?
			 strerrorname_np(r->err) : "?");
	return buf;
}

/* clone3's ENOSYS sends glibc to clone: then clone must run. */
static int clone_ok(const struct result *res)
{
	for (int i = 0; mwi_sc_calls[i].name; i++)
		if (mwi_sc_calls[i].nr == SYS_clone)
			return res[i].action == MWI_SC_ALLOW;
	return 0;
}

static const char *effect(const struct result *r,
			  const struct mwi_sc_call *call)
{
	if (r->action == MWI_SC_ALLOW)
		return "-";
	if (r->action <= MWI_SC_TRAP)
		return "the target would die";
	if (r->action == MWI_SC_NOTIFY)
		return "a supervisor runs it or fails it";
	if (call->nr == SYS_clone3 && r->err == ENOSYS)
		return "glibc falls back to clone";
	return call->effect;
}

int mwi_sc_check(pid_t pid, FILE *out, int verbose)
{
	static struct result res[MAX_CALLS], other[MAX_CALLS];
	char path[64], word[32];
	const char *source = NULL, *why = "";
	struct chain first, c;
	pid_t tids[1024];
	int mode, filters, my_mode, my_filters, ntids, i, ret, refuse = 0,
	    degraded = 0, unknown = 0, bad_i = 0;
	const struct mwi_sc_call *call;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ret = seccomp_status(path, &mode, &filters);
	if (ret)
		return ret;
	ntids = threads(pid, tids, 1024);
	if (ntids < 0)
		return ntids;
	/* each thread has its own chain: the worst of them counts */
	for (i = 0; i < ntids; i++) {
		int m, f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status",
			 (int)pid, (int)tids[i]);
		if (seccomp_status(path, &m, &f))
			continue;	/* ended meanwhile */
		if (m > mode)
			mode = m;
		if (f > filters)
			filters = f;
	}
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

	/* 1. read each thread's chain and evaluate it */
	for (i = 0; mwi_sc_calls[i].name; i++)
		res[i] = (struct result){ MWI_SC_ALLOW, 0, 0, 0 };
	ret = 0;
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
				worse(&res[j], &other[j], 0);
			chain_free(&c);
		} else {
			first = c;
		}
		if (verbose)
			fprintf(out, "# thread %d: %d filters read\n",
				(int)tids[i], c.n);
	}
	chain_free(&first);
	if (!ret) {
		source = "read";
	} else {
		if (verbose)
			fprintf(out, "# PTRACE_SECCOMP_GET_FILTER: %s\n",
				strerror(-ret));
		/* 2. the same chain as ours: probe ours in a child */
		ret = seccomp_status("/proc/self/status", &my_mode,
				     &my_filters);
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
		if (!ret && my_mode == 2 && my_filters == filters &&
		    filters > 0 && same_link("/proc/self/ns/pid", path) &&
		    (snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid),
		     same_link("/proc/self/ns/mnt", path))) {
			ret = probe_all(res);
			if (ret) {
				fprintf(out, "verdict unknown probe: probing "
					"failed: %s\n", strerror(-ret));
				return 2;
			}
			source = "probed";
		} else {
			fprintf(out, "verdict unknown unreadable: the filter "
				"cannot be read (%s) and is not shown to be "
				"ours (we have %d filters, it has %d)\n",
				geteuid() ? "not root" : "we run under a "
				"filter, or lack CAP_SYS_ADMIN",
				my_mode == 2 ? my_filters : 0, filters);
			return 2;
		}
	}

	for (i = 0, call = mwi_sc_calls; call->name; call++, i++) {
		const struct result *r = &res[i];
		int bad = r->action <= MWI_SC_TRAP ||
			  (r->action == MWI_SC_ERRNO &&
			   call->need == MWI_SC_REQUIRED &&
			   !(call->nr == SYS_clone3 && r->err == ENOSYS &&
			     clone_ok(res)));

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

/* --- leaving a guarded call ---------------------------------------------- */

int mwi_sc_settle(struct mwi_thread *t)
{
	struct user_regs_struct r;
	int status;

	if (!t->seized || !t->at_enter_stop)
		return 0;
	t->at_enter_stop = 0;
	/* skip the rt_sigreturn (running it would also cancel a pending
	 * restart_syscall, as every sigreturn does), and let whatever the
	 * filter writes into rax be overwritten at the exit stop */
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r))
		return -errno;
	r.orig_rax = (unsigned long long)-1;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) ||
	    ptrace(PTRACE_SYSCALL, t->tid, 0, 0))
		return -errno;
	/* nothing is delivered between a syscall's entry and its exit */
	if (waitpid(t->tid, &status, __WALL) < 0)
		return -errno;
	if (!WIFSTOPPED(status))
		return -ESRCH;
	return WSTOPSIG(status) == (SIGTRAP | 0x80) ? 0 : -EPROTO;
}
