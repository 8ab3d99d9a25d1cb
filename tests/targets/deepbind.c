/* SPDX-License-Identifier: MIT */
/* A process with two allocators: libdeep.so (libdeepalloc, loaded with
 * RTLD_DEEPBIND) beside glibc's malloc everywhere else.  Prints "ready
 * PID", then obeys one command per line:
 *   keep N     libdeep keeps N blocks of 1000 bytes (its allocator)
 *   drop       libdeep frees every block it keeps
 *   leak N     the executable keeps N blocks of 1000 bytes (glibc)
 * answering each; on EOF prints "bye" and exits 0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void *leak_here(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;
}

int main(int argc, char **argv)
{
	int (*keep)(int, size_t);
	void (*drop)(void);
	char line[128];
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: deepbind LIBDEEP\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "deepbind: %s\n", dlerror());
		return 1;
	}
	*(void **)&keep = dlsym(h, "deep_keep");
	*(void **)&drop = dlsym(h, "deep_drop");
	if (!keep || !drop)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		int n = 0;

		if (sscanf(line, "keep %d", &n) == 1) {
			printf("kept %d\n", keep(n, 1000));
		} else if (strncmp(line, "drop", 4) == 0) {
			drop();
			printf("dropped\n");
		} else if (sscanf(line, "leak %d", &n) == 1) {
			while (n-- > 0)
				leak_here(1000);
			printf("leaked\n");
		} else {
			printf("unknown\n");
		}
	}
	printf("bye\n");
	return 0;
}
