/* SPDX-License-Identifier: MIT */
/* killstep.c - preloaded into mwrap-inject by tests/safety/
 * test_inject_steps.py: SIGKILLs the injector right after one chosen step
 * that changes the target, as if an operator killed it at exactly that
 * moment.  A step is a ptrace request other than a read, or a
 * process_vm_writev.
 *
 *   MWI_KILL_AFTER=NAME:N+K  die K steps after the Nth step named NAME
 *                            (the names below; N from 1, K from 0)
 *   MWI_KILL_BEFORE=NAME:N   die just before the Nth step named NAME
 *   MWI_STEP_LOG=PATH        append each step's name to PATH, a line each
 *
 * Not part of the product: only tests load it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *step_name(long req)
{
	switch (req) {
	case PTRACE_SEIZE:	return "SEIZE";
	case PTRACE_INTERRUPT:	return "INTERRUPT";
	case PTRACE_CONT:	return "CONT";
	case PTRACE_SYSCALL:	return "SYSCALL";
#ifdef PT_SETREGS		/* x86-64; aarch64 has SETREGSET only */
	case PTRACE_SETREGS:	return "SETREGS";
#endif
	case PTRACE_SETREGSET:	return "SETREGSET";
	case PTRACE_SETSIGMASK:	return "SETSIGMASK";
	case PTRACE_POKEDATA:	return "POKEDATA";
	case PTRACE_DETACH:	return "DETACH";
	default:		return NULL;	/* a read */
	}
}

/* The count of each name so far, in a short table: a few names. */
static struct { const char *name; long n; } counts[16];
static long steps_since_anchor = -1;	/* -1: the anchor not seen yet */
static long steps_wanted;		/* K of MWI_KILL_AFTER */

/* What follows N in @spec ("NAME:N...") when it names the Nth @name,
 * else NULL. */
static const char *names(const char *spec, const char *name, long n)
{
	size_t len = strlen(name);
	char *end;

	if (!spec || strncmp(spec, name, len) || spec[len] != ':')
		return NULL;
	return strtol(spec + len + 1, &end, 10) == n ? end : NULL;
}

/* Counts a step named @name; @done: 0 before it is taken, 1 after. */
static void step(const char *name, int done)
{
	const char *rest;
	const char *log = getenv("MWI_STEP_LOG");
	long n;
	int i;

	for (i = 0; i < 16 && counts[i].name; i++)
		if (!strcmp(counts[i].name, name))
			break;
	if (i == 16)
		return;
	if (!done) {
		if (names(getenv("MWI_KILL_BEFORE"), name, counts[i].n + 1))
			raise(SIGKILL);
		return;
	}
	counts[i].name = name;
	n = ++counts[i].n;
	if (log) {
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);

		if (fd >= 0) {
			dprintf(fd, "%s\n", name);
			close(fd);
		}
	}
	if (steps_since_anchor >= 0) {
		steps_since_anchor++;
	} else if ((rest = names(getenv("MWI_KILL_AFTER"), name, n))) {
		steps_since_anchor = 0;
		steps_wanted = *rest == '+' ? atol(rest + 1) : 0;
	}
	if (steps_since_anchor >= 0 && steps_since_anchor == steps_wanted)
		raise(SIGKILL);
}

long ptrace(enum __ptrace_request req, ...)
{
	static long (*real)(enum __ptrace_request, pid_t, void *, void *);
	const char *name = step_name(req);
	va_list ap;
	pid_t pid;
	void *addr, *data;
	long ret;

	va_start(ap, req);
	pid = va_arg(ap, pid_t);
	addr = va_arg(ap, void *);
	data = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (long (*)(enum __ptrace_request, pid_t, void *, void *))
			dlsym(RTLD_NEXT, "ptrace");
	if (name)
		step(name, 0);
	ret = real(req, pid, addr, data);
	if (name)
		step(name, 1);
	return ret;
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *local,
			  unsigned long nlocal, const struct iovec *remote,
			  unsigned long nremote, unsigned long flags)
{
	static ssize_t (*real)(pid_t, const struct iovec *, unsigned long,
			       const struct iovec *, unsigned long,
			       unsigned long);
	ssize_t ret;

	if (!real)
		real = (ssize_t (*)(pid_t, const struct iovec *, unsigned long,
				    const struct iovec *, unsigned long,
				    unsigned long))dlsym(RTLD_NEXT,
							 "process_vm_writev");
	step("WRITEV", 0);
	ret = real(pid, local, nlocal, remote, nremote, flags);
	step("WRITEV", 1);
	return ret;
}
