/* SPDX-License-Identifier: MIT */
/* Loads and unloads libraries while preloaded (tests/test_symbols.py):
 * commands on stdin, one a line, each answered "ok":
 *   load PATH      dlopen PATH
 *   alloc N SIZE   N blocks of SIZE bytes from its lib_alloc, kept
 *   unload         dlclose it
 *   dump PATH      the table as JSON into PATH (libmwrap.so's mw_dump_fd)
 * Exits 0 at stdin's EOF. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	int (*dump)(int, uint64_t, int) =
		(int (*)(int, uint64_t, int))dlsym(RTLD_DEFAULT, "mw_dump_fd");
	void *(*lib_alloc)(size_t) = NULL;
	void *lib = NULL;
	char line[4096], arg[4096];
	unsigned long n, size;

	setvbuf(stdout, NULL, _IONBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		int ok = 0;

		if (sscanf(line, "load %4095s", arg) == 1) {
			lib = dlopen(arg, RTLD_NOW);
			lib_alloc = lib ? (void *(*)(size_t))dlsym(lib, "lib_alloc")
					: NULL;
			ok = lib_alloc != NULL;
		} else if (sscanf(line, "alloc %lu %lu", &n, &size) == 2) {
			for (ok = lib_alloc != NULL; ok && n--;)
				ok = lib_alloc(size) != NULL;
		} else if (!strcmp(line, "unload\n")) {
			ok = lib && !dlclose(lib);
			lib = NULL;
			lib_alloc = NULL;
		} else if (sscanf(line, "dump %4095s", arg) == 1) {
			int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0600);

			ok = dump && fd >= 0 && !dump(fd, 0, 1);
			if (fd >= 0)
				close(fd);
		}
		printf("%s\n", ok ? "ok" : "failed");
	}
	return 0;
}
