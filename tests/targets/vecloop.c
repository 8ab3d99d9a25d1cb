/* SPDX-License-Identifier: MIT */
/* A tight loop with live vector registers and no syscalls: all 16 XMM
 * registers (with "ymm", all 16 YMM registers, whose upper halves only
 * the AVX part of the extended state holds) keep known values through
 * each block, checked after it, so damage to the vector state by an
 * attach shows as "CORRUPT".  Prints "ready" ("noavx" instead when ymm
 * is asked for on a CPU without AVX), runs until stdin closes (a reader
 * thread flips a flag), then prints "ok BLOCKS" and exits 0, or exits 1
 * at the first mismatch.  On aarch64 the same with the NEON registers
 * d0-d15 ("ymm" answers "noavx"). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile int stop;

static void *wait_stdin(void *arg)
{
	char buf[64];

	(void)arg;
	while (read(0, buf, sizeof(buf)) > 0)
		;
	stop = 1;
	return NULL;
}

#if defined(__x86_64__)
#define X(n) "movsd " #n "*8(%[in]), %%xmm" #n "\n"
#define Y(n) "addsd %%xmm15, %%xmm" #n "\n subsd %%xmm15, %%xmm" #n "\n"
#define Z(n) "movsd %%xmm" #n ", " #n "*8(%[out])\n"

/* Holds known values in all 16 XMM registers across a long loop that
 * leaves them unchanged (exact adds and subtracts), then compares. */
static int regs_survive(void)
{
	double in[16], out[16];

	for (int i = 0; i < 16; i++)
		in[i] = i + 1;
	in[15] = 16.0;
	__asm__ volatile(
		X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
		X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
		"mov $20000000, %%rcx\n"
		"1:\n"
		Y(0) Y(1) Y(2) Y(3) Y(4) Y(5) Y(6) Y(7)
		Y(8) Y(9) Y(10) Y(11) Y(12) Y(13) Y(14)
		"dec %%rcx\n"
		"jnz 1b\n"
		Z(0) Z(1) Z(2) Z(3) Z(4) Z(5) Z(6) Z(7)
		Z(8) Z(9) Z(10) Z(11) Z(12) Z(13) Z(14) Z(15)
		:
		: [in] "r"(in), [out] "r"(out)
		: "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
		  "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
		  "xmm13", "xmm14", "xmm15", "memory", "cc");
	return memcmp(in, out, sizeof(in)) == 0;
}

#define XY(n) "vmovupd " #n "*32(%[in]), %%ymm" #n "\n"
#define YY(n) "vaddpd %%ymm15, %%ymm" #n ", %%ymm" #n "\n" \
	      "vsubpd %%ymm15, %%ymm" #n ", %%ymm" #n "\n"
#define ZY(n) "vmovupd %%ymm" #n ", " #n "*32(%[out])\n"

/* The same with four doubles in each YMM register. */
static int ymm_survive(void)
{
	double in[16][4], out[16][4];

	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 4; j++)
			in[i][j] = i * 4 + j + 1;
	__asm__ volatile(
		XY(0) XY(1) XY(2) XY(3) XY(4) XY(5) XY(6) XY(7)
		XY(8) XY(9) XY(10) XY(11) XY(12) XY(13) XY(14) XY(15)
		"mov $20000000, %%rcx\n"
		"1:\n"
		YY(0) YY(1) YY(2) YY(3) YY(4) YY(5) YY(6) YY(7)
		YY(8) YY(9) YY(10) YY(11) YY(12) YY(13) YY(14)
		"dec %%rcx\n"
		"jnz 1b\n"
		ZY(0) ZY(1) ZY(2) ZY(3) ZY(4) ZY(5) ZY(6) ZY(7)
		ZY(8) ZY(9) ZY(10) ZY(11) ZY(12) ZY(13) ZY(14) ZY(15)
		"vzeroupper\n"
		:
		: [in] "r"(in), [out] "r"(out)
		: "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5",
		  "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
		  "xmm13", "xmm14", "xmm15", "memory", "cc");
	return memcmp(in, out, sizeof(in)) == 0;
}

#elif defined(__aarch64__)
#define X(n) "ldr d" #n ", [%[in], #" #n "*8]\n"
#define Y(n) "fadd d" #n ", d" #n ", d15\n fsub d" #n ", d" #n ", d15\n"
#define Z(n) "str d" #n ", [%[out], #" #n "*8]\n"

/* Known values in d0-d15 across a long loop that leaves them unchanged. */
static int regs_survive(void)
{
	double in[16], out[16];

	for (int i = 0; i < 16; i++)
		in[i] = i + 1;
	__asm__ volatile(
		X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
		X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
		"movz x9, #0x2d00\n"	/* 20000000 */
		"movk x9, #0x131, lsl #16\n"
		"1:\n"
		Y(0) Y(1) Y(2) Y(3) Y(4) Y(5) Y(6) Y(7)
		Y(8) Y(9) Y(10) Y(11) Y(12) Y(13) Y(14)
		"subs x9, x9, #1\n"
		"b.ne 1b\n"
		Z(0) Z(1) Z(2) Z(3) Z(4) Z(5) Z(6) Z(7)
		Z(8) Z(9) Z(10) Z(11) Z(12) Z(13) Z(14) Z(15)
		:
		: [in] "r"(in), [out] "r"(out)
		: "x9", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8",
		  "v9", "v10", "v11", "v12", "v13", "v14", "v15", "memory",
		  "cc");
	return memcmp(in, out, sizeof(in)) == 0;
}
#define ymm_survive regs_survive
#define __builtin_cpu_supports(what) 0
#else
#error "vecloop: x86_64 and aarch64 only"
#endif

int main(int argc, char **argv)
{
	int ymm = argc > 1 && strcmp(argv[1], "ymm") == 0;
	int (*check)(void) = ymm ? ymm_survive : regs_survive;
	pthread_t t;
	unsigned long blocks = 0;

	if (ymm && !__builtin_cpu_supports("avx")) {
		printf("noavx\n");
		return 0;
	}
	pthread_create(&t, NULL, wait_stdin, NULL);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		if (!check()) {
			printf("CORRUPT after %lu blocks\n", blocks);
			return 1;
		}
		blocks++;
	}
	printf("ok %s\n", blocks > 0 ? "blocks" : "none");
	return 0;
}
