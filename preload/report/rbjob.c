/* SPDX-License-Identifier: MIT */
/* rbjob.c - see rbjob.h */
#define _GNU_SOURCE
#include "report/rbjob.h"
#include "report/rbcall.h"
#include "core/rbpos.h"

#include <errno.h>
#include <fcntl.h>
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
/* Handed over by the state machine: the helper writes job_body before
 * WAITING; the job calls it and writes job_result before DONE
 * (release); the helper reads it after seeing DONE (acquire). */
static int (*job_body)(void);
static int job_result;

/* --- the Ruby thread's side ------------------------------------------------ */

static void job(void *unused)
{
	int expected = WAITING, ret;

	(void)unused;
	if (!__atomic_compare_exchange_n(&state, &expected, RUNNING, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;		/* the helper gave up on this request */
	ret = job_body();
	if (ret != MW_RBJOB_LATER)
		mw_rbjob_end(ret);
}

void mw_rbjob_end(int result)
{
	job_result = result;
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
void mw_rbjob_on_signal_sigsafe(void)
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
			si.si_value.sival_int = MW_RBJOB_SIGVAL;
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

int mw_rbjob_begin(void)
{
	int expected;

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
	return 0;
}

int mw_rbjob_run(int (*body)(void), int start_ms)
{
	int expected, waited = 0, running_ms = 0, kick;

	job_body = body;
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

unsigned mw_rbjob_flagged(void)
{
	unsigned n = __atomic_load_n(&nflagged, __ATOMIC_ACQUIRE);

	return n < FLAGGED_MAX ? n : FLAGGED_MAX;
}
