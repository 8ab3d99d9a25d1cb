/* SPDX-License-Identifier: MIT */
/* manysites - how long a dump of many native sites takes: 100,000 call
 * sites of malloc in one static function (each call its own return
 * address, so its own site) of a program that exports 2,000 functions
 * (libruby-3.1 exports 1,820: dladdr looks through them all), then dumps
 * of the whole table to /dev/null through libmwrap.so's C API, timed
 * here.  Run preloaded:
 *
 *   MWRAP=dump_path:/dev/null scripts/mwrap build/bench/manysites [ROUNDS]
 *
 * Prints one line per dump format: its first dump (caches cold) and the
 * median of the next ROUNDS (default 5), in milliseconds of the dumping
 * thread's CPU time. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SITES 100000

/* SITES calls of malloc(16), each freed at once */
void many_sites(void);
#if defined(__x86_64__)
__asm__(".text\n"
	".type many_sites, @function\n"
	"many_sites:\n"
	"	sub $8, %rsp\n"
	"	.rept 100000\n"
	"	mov $16, %edi\n"
	"	call malloc@PLT\n"
	"	mov %rax, %rdi\n"
	"	call free@PLT\n"
	"	.endr\n"
	"	add $8, %rsp\n"
	"	ret\n"
	".size many_sites, .-many_sites\n");

/* 2,000 exported one-byte functions (-rdynamic) */
__asm__(".macro filler\n"
	".globl filler\\@\n"
	".type filler\\@, @function\n"
	"filler\\@: ret\n"
	".size filler\\@, 1\n"
	".endm\n"
	".rept 2000\n"
	"filler\n"
	".endr\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".type many_sites, %function\n"
	"many_sites:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, sp\n"
	"	.rept 100000\n"
	"	mov x0, #16\n"
	"	bl malloc\n"
	"	bl free\n"
	"	.endr\n"
	"	ldp x29, x30, [sp], #16\n"
	"	ret\n"
	".size many_sites, .-many_sites\n");

/* 2,000 exported one-instruction functions (-rdynamic) */
__asm__(".macro filler\n"
	".globl filler\\@\n"
	".type filler\\@, %function\n"
	"filler\\@: ret\n"
	".size filler\\@, 4\n"
	".endm\n"
	".rept 2000\n"
	"filler\n"
	".endr\n");
#else
#error "manysites: x86_64 and aarch64 only"
#endif

static double now_ms(void)
{
	struct timespec t;

	/* the dumping thread's CPU time: what a dump costs the process,
	 * whatever else the machine runs */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int (*dump)(int, uint64_t, int) =
		(int (*)(int, uint64_t, int))dlsym(RTLD_DEFAULT, "mw_dump_fd");
	int rounds = argc > 1 ? atoi(argv[1]) : 5, fmt, i;
	int fd = open("/dev/null", O_WRONLY);
	double t[64];

	if (!dump || fd < 0 || rounds < 1 || rounds > 63) {
		fprintf(stderr, "manysites: run it under scripts/mwrap\n");
		return 2;
	}
	many_sites();
	for (fmt = 0; fmt < 2; fmt++) {
		for (i = 0; i <= rounds; i++) {
			double t0 = now_ms();

			if (dump(fd, 0, fmt))
				return 1;
			t[i] = now_ms() - t0;
		}
		qsort(t + 1, (size_t)rounds, sizeof(t[0]), by_value);
		printf("%s dump of %d native sites: first %.1f ms, then %.1f ms CPU\n",
		       fmt ? "json" : "text", SITES, t[0], t[1 + rounds / 2]);
	}
	return 0;
}
