/* SPDX-License-Identifier: MIT */
/* target.c - a C target for tests/arm64/test_inject_calls.py.
 *   target read   blocks in read(2) on stdin: each line is echoed back
 *                 as "got LINE", "end" exits 0
 *   target spin   computes in its own code (no syscall, no libc) until
 *                 stdin closes, checking the registers it keeps live:
 *                 prints "sum N" with the checksum, the same every run
 *   target sleep  sleeps in nanosleep(2) for 2 s at a time, printing
 *                 "slept" after each full sleep, until stdin closes
 * Each prints "ready" first. */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int stdin_done(void)
{
	struct pollfd p = { 0, POLLIN, 0 };

	return poll(&p, 1, 0) != 0;
}

/* a loop whose state lives in registers: an injected call that does not
 * give them back changes the sum */
__attribute__((noinline)) static uint64_t spin(uint64_t n)
{
	uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6;

	for (uint64_t i = 0; i < n; i++) {
		a += b ^ i;
		b += c * 3;
		c ^= d + i;
		d += e >> 1;
		e ^= f + a;
		f += a;
	}
	return a ^ b ^ c ^ d ^ e ^ f;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "read";
	char line[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	if (!strcmp(mode, "spin")) {
		uint64_t sum = 0, blocks = 0, want = spin(5000000);

		while (!stdin_done()) {
			sum = spin(5000000);
			if (sum != want) {
				printf("CORRUPT %llu\n", (unsigned long long)sum);
				return 1;
			}
			blocks++;
		}
		printf("sum %llu blocks %s\n", (unsigned long long)sum,
		       blocks ? "some" : "none");
		return 0;
	}
	if (!strcmp(mode, "sleep")) {
		struct timespec ts = { 2, 0 };

		while (!stdin_done()) {
			if (nanosleep(&ts, NULL) == 0)
				printf("slept\n");
			else
				printf("EINTR\n");
		}
		return 0;
	}
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "end"))
			return 0;
		printf("got %s\n", line);
	}
	return 2;
}
