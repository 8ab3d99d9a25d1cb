/* SPDX-License-Identifier: MIT */
/* A target under a seccomp filter of the test's choosing.  Prints
 * "ready", then reads commands on stdin until it closes:
 *
 *   leak N SIZE   N blocks of SIZE bytes from leak_here(), kept
 *   report        (log mode) "syscalls NR..." made since the last report
 *   anything else echoed as "got LINE"
 *
 * Modes:
 *   log           every syscall of every thread but the logger is sent to
 *                 a logger thread (SECCOMP_RET_USER_NOTIF), which records
 *                 its number and lets it run: the syscalls an attach makes
 *   kill NR...    SECCOMP_RET_KILL_PROCESS on those syscall numbers
 *   trap NR...    SECCOMP_RET_TRAP (SIGSYS, no handler: a core dump)
 *   errno NR...   SECCOMP_RET_ERRNO(EPERM)
 *   enosys NR...  SECCOMP_RET_ERRNO(ENOSYS), as the runtimes answer clone3
 *   argkill NR    SECCOMP_RET_KILL_PROCESS on NR when its first argument's
 *                 low word is 0x5eccc0, else allow (a filter on arguments)
 *
 * "sctarget MODE NR... -- CMD ARGS" runs CMD under that filter instead
 * (a checker under the same filter as its target).
 */
#define _GNU_SOURCE
#include "notiflog.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NR NOTIFLOG_MAX_NR

/* the filters' architecture check: this build's */
#if defined(__aarch64__)
#define SC_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__x86_64__)
#define SC_AUDIT_ARCH AUDIT_ARCH_X86_64
#else
#error "sctarget: an architecture without its AUDIT_ARCH here"
#endif

static unsigned long seen[MAX_NR / 64];
static int listener = -1;

__attribute__((noinline)) void *leak_here(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

/* Not filtered (started before the filter): its own syscalls are free. */
static void *logger(void *arg)
{
	(void)arg;
	notiflog_serve(&listener, 0, seen, seen);	/* no thread 0 */
	return NULL;
}

static int install(struct sock_filter *f, unsigned short n, unsigned flags)
{
	struct sock_fprog prog = { n, f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static int log_mode(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	pthread_t t;
	int fd;

	if (pthread_create(&t, NULL, logger, NULL))
		return -1;
	fd = install(f, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER);
	if (fd < 0)
		return -1;
	__atomic_store_n(&listener, fd, __ATOMIC_RELEASE);
	return 0;
}

/* Up to 32 syscall numbers, each answered with @action. */
static int list_mode(char **nrs, int n, unsigned action)
{
	struct sock_filter f[4 + 2 * 32];
	unsigned short k = 0;
	int i;

	if (n > 32)
		n = 32;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
			SC_AUDIT_ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
			SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			offsetof(struct seccomp_data, nr));
	for (i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
				(unsigned)atoi(nrs[i]), 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
			SECCOMP_RET_ALLOW);
	return install(f, k, 0);
}

static int argkill_mode(const char *nr)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)atoi(nr), 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x5eccc0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return install(f, sizeof(f) / sizeof(f[0]), 0);
}

static void report(void)
{
	int i;

	fputs("syscalls", stdout);
	for (i = 0; i < MAX_NR; i++)
		if (__atomic_fetch_and(&seen[i / 64], ~(1UL << (i % 64)),
				       __ATOMIC_RELAXED) & (1UL << (i % 64)))
			printf(" %d", i);
	putchar('\n');
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char line[256];
	size_t size;
	int ret, n, i, nargs;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (nargs = 2; nargs < argc && strcmp(argv[nargs], "--"); nargs++)
		;
	nargs -= 2;
	if (!strcmp(mode, "log"))
		ret = log_mode();
	else if (!strcmp(mode, "kill"))
		ret = list_mode(argv + 2, nargs, SECCOMP_RET_KILL_PROCESS);
	else if (!strcmp(mode, "trap"))
		ret = list_mode(argv + 2, nargs, SECCOMP_RET_TRAP);
	else if (!strcmp(mode, "errno"))
		ret = list_mode(argv + 2, nargs, SECCOMP_RET_ERRNO | EPERM);
	else if (!strcmp(mode, "argkill") && nargs == 1)
		ret = argkill_mode(argv[2]);
	else if (!strcmp(mode, "enosys"))
		ret = list_mode(argv + 2, nargs, SECCOMP_RET_ERRNO | ENOSYS);
	else {
		fprintf(stderr, "usage: sctarget log|kill|trap|errno|enosys|argkill "
			"[NR...] [-- CMD...]\n");
		return 2;
	}
	if (ret < 0) {
		perror("seccomp");
		return 2;
	}
	if (nargs + 2 < argc - 1) {
		execvp(argv[nargs + 3], argv + nargs + 3);
		perror(argv[nargs + 3]);
		return 127;
	}
	printf("ready pid=%d\n", (int)getpid());
	for (;;) {
		errno = 0;
		if (!fgets(line, sizeof(line), stdin)) {
			/* a ptrace stop during a USER_NOTIF wait fails the
			 * call (EINTR, or ENOSYS when it was never answered) */
			if (feof(stdin))
				break;
			fprintf(stderr, "sctarget: read: %s\n", strerror(errno));
			clearerr(stdin);
			continue;
		}
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "leak %d %zu", &n, &size) == 2) {
			for (i = 0; i < n; i++)
				leak_here(size);
			printf("leaked %d\n", n);
		} else if (!strcmp(line, "report")) {
			report();
		} else {
			printf("got %s\n", line);
		}
	}
	puts("bye");
	return 0;
}
