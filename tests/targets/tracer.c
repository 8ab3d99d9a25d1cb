/* SPDX-License-Identifier: MIT */
/* Holds another process traced (PTRACE_SEIZE, no stop) until stdin
 * closes: the "already traced by a debugger" case. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[64];
	pid_t pid = argc > 1 ? atoi(argv[1]) : 0;

	if (pid <= 0 || ptrace(PTRACE_SEIZE, pid, 0, 0)) {
		perror("tracer");
		return 1;
	}
	printf("tracing %d\n", (int)pid);
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
