/* SPDX-License-Identifier: MIT */
/* stale_lr.c - a thread inside libc's strlen whose x30 says that a "bl
 * memcpy" called it (aarch64 only): tests/arm64/test_safe_points.py.
 *
 * It calls memcpy once with bl; memcpy returns to the next instruction,
 * which jumps (br, no link) to strlen on a 16 MiB string, and strlen's
 * ret comes back there: a loop where x30 always points just past the bl
 * to memcpy while pc is nearly always in strlen.  The injector must not
 * take that for a thread inside memcpy (pc is not in memcpy's code).
 * Prints "ready"; SIGTERM ends the loop: prints "stopped N" (N the
 * strlen result), exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	size_t n = 16 << 20;
	char *s = malloc(n + 1), dst[8], src[8] = "abc";
	size_t (*len)(const char *) = strlen;
	unsigned long got;

	if (!s)
		return 2;
	memset(s, 'x', n);
	s[n] = '\0';
	signal(SIGTERM, on_term);
	puts("ready");
	fflush(stdout);
#if defined(__aarch64__)
	__asm__ volatile(
		"mov x0, %[dst]\n\t"
		"mov x1, %[src]\n\t"
		"mov x2, #4\n\t"
		"bl memcpy\n"
		"1:\tmov %[got], x0\n\t"
		"ldr w9, [%[stop]]\n\t"
		"mov x0, %[s]\n\t"
		"cbnz w9, 2f\n\t"
		"br %[len]\n"
		"2:\n"
		: [got] "=&r"(got)
		: [dst] "r"(dst), [src] "r"(src), [s] "r"(s), [len] "r"(len),
		  [stop] "r"(&stop)
		: "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
		  "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
		  "x18", "x30", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7",
		  "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23",
		  "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",
		  "cc", "memory");
#else
	(void)dst;
	(void)src;
	got = len(s);
#endif
	printf("stopped %lu\n", got);
	return 0;
}
