/* SPDX-License-Identifier: MIT */
/* vecvictim.c - see vecvictim.h */
#define _GNU_SOURCE
#include "vecvictim.h"

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Each block runs this many rounds (a few hundred ms): an interruption
 * nearly always lands inside one, with the values in the registers. */
#define ROUNDS "20000000"
/* the same, as aarch64's two 16-bit halves: 0x131 << 16 | 0x2d00 */
#define ROUNDS_LO "0x2d00"
#define ROUNDS_HI "0x131"

/* Has standard input closed (or been written)?  Polled between blocks:
 * one thread only, so that gdb's call can only run on the one whose
 * vector registers are live. */
static int stdin_done(void)
{
	struct pollfd p = { 0, POLLIN, 0 };

	return poll(&p, 1, 0) != 0;
}

#if defined(__x86_64__)
/* Every register gets in[n], adds and subtracts the last one (exact, in
 * integers) ROUNDS times, and is stored to out[n]: out == in unless
 * something changed a register meanwhile. */
#define Z_IN(n) "vmovdqu64 " #n "*64(%[in]), %%zmm" #n "\n"
#define Z_OP(n) "vpaddq %%zmm31, %%zmm" #n ", %%zmm" #n "\n" \
		"vpsubq %%zmm31, %%zmm" #n ", %%zmm" #n "\n"
#define Z_OUT(n) "vmovdqu64 %%zmm" #n ", " #n "*64(%[out])\n"
#define K_IN(n) "kmovw " #n "*2(%[kin]), %%k" #n "\n"
#define K_OUT(n) "kmovw %%k" #n ", " #n "*2(%[kout])\n"

__attribute__((target("avx512f"))) static int zmm_survive(void)
{
	uint64_t in[32][8] __attribute__((aligned(64)));
	uint64_t out[32][8] __attribute__((aligned(64)));
	uint16_t kin[8], kout[8];

	for (int i = 0; i < 32; i++)
		for (int j = 0; j < 8; j++)
			in[i][j] = (uint64_t)(i * 8 + j + 1) * 0x0101010101ull;
	for (int i = 0; i < 8; i++)
		kin[i] = kout[i] = (uint16_t)(0x1111 * i + 0x0f0f);
	__asm__ volatile(
		Z_IN(0) Z_IN(1) Z_IN(2) Z_IN(3) Z_IN(4) Z_IN(5) Z_IN(6) Z_IN(7)
		Z_IN(8) Z_IN(9) Z_IN(10) Z_IN(11) Z_IN(12) Z_IN(13) Z_IN(14)
		Z_IN(15) Z_IN(16) Z_IN(17) Z_IN(18) Z_IN(19) Z_IN(20) Z_IN(21)
		Z_IN(22) Z_IN(23) Z_IN(24) Z_IN(25) Z_IN(26) Z_IN(27) Z_IN(28)
		Z_IN(29) Z_IN(30) Z_IN(31)
		K_IN(1) K_IN(2) K_IN(3) K_IN(4) K_IN(5) K_IN(6) K_IN(7)
		"mov $" ROUNDS ", %%rcx\n"
		"1:\n"
		Z_OP(0) Z_OP(1) Z_OP(2) Z_OP(3) Z_OP(4) Z_OP(5) Z_OP(6) Z_OP(7)
		Z_OP(8) Z_OP(9) Z_OP(10) Z_OP(11) Z_OP(12) Z_OP(13) Z_OP(14)
		Z_OP(15) Z_OP(16) Z_OP(17) Z_OP(18) Z_OP(19) Z_OP(20) Z_OP(21)
		Z_OP(22) Z_OP(23) Z_OP(24) Z_OP(25) Z_OP(26) Z_OP(27) Z_OP(28)
		Z_OP(29) Z_OP(30)
		"dec %%rcx\n"
		"jnz 1b\n"
		Z_OUT(0) Z_OUT(1) Z_OUT(2) Z_OUT(3) Z_OUT(4) Z_OUT(5) Z_OUT(6)
		Z_OUT(7) Z_OUT(8) Z_OUT(9) Z_OUT(10) Z_OUT(11) Z_OUT(12)
		Z_OUT(13) Z_OUT(14) Z_OUT(15) Z_OUT(16) Z_OUT(17) Z_OUT(18)
		Z_OUT(19) Z_OUT(20) Z_OUT(21) Z_OUT(22) Z_OUT(23) Z_OUT(24)
		Z_OUT(25) Z_OUT(26) Z_OUT(27) Z_OUT(28) Z_OUT(29) Z_OUT(30)
		Z_OUT(31)
		K_OUT(1) K_OUT(2) K_OUT(3) K_OUT(4) K_OUT(5) K_OUT(6) K_OUT(7)
		"vzeroupper\n"
		:
		: [in] "r"(in), [out] "r"(out), [kin] "r"(kin), [kout] "r"(kout)
		: "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		  "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
		  "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",
		  "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",
		  "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4",
		  "k5", "k6", "k7", "memory", "cc");
	return memcmp(in, out, sizeof(in)) == 0 &&
	       memcmp(kin + 1, kout + 1, 7 * sizeof(kin[0])) == 0;
}

#define Y_IN(n) "vmovdqu " #n "*32(%[in]), %%ymm" #n "\n"
#define Y_OP(n) "vpaddq %%ymm15, %%ymm" #n ", %%ymm" #n "\n" \
		"vpsubq %%ymm15, %%ymm" #n ", %%ymm" #n "\n"
#define Y_OUT(n) "vmovdqu %%ymm" #n ", " #n "*32(%[out])\n"

__attribute__((target("avx2"))) static int ymm_survive(void)
{
	uint64_t in[16][4], out[16][4];

	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 4; j++)
			in[i][j] = (uint64_t)(i * 4 + j + 1) * 0x0101010101ull;
	__asm__ volatile(
		Y_IN(0) Y_IN(1) Y_IN(2) Y_IN(3) Y_IN(4) Y_IN(5) Y_IN(6) Y_IN(7)
		Y_IN(8) Y_IN(9) Y_IN(10) Y_IN(11) Y_IN(12) Y_IN(13) Y_IN(14)
		Y_IN(15)
		"mov $" ROUNDS ", %%rcx\n"
		"1:\n"
		Y_OP(0) Y_OP(1) Y_OP(2) Y_OP(3) Y_OP(4) Y_OP(5) Y_OP(6) Y_OP(7)
		Y_OP(8) Y_OP(9) Y_OP(10) Y_OP(11) Y_OP(12) Y_OP(13) Y_OP(14)
		"dec %%rcx\n"
		"jnz 1b\n"
		Y_OUT(0) Y_OUT(1) Y_OUT(2) Y_OUT(3) Y_OUT(4) Y_OUT(5) Y_OUT(6)
		Y_OUT(7) Y_OUT(8) Y_OUT(9) Y_OUT(10) Y_OUT(11) Y_OUT(12)
		Y_OUT(13) Y_OUT(14) Y_OUT(15)
		"vzeroupper\n"
		:
		: [in] "r"(in), [out] "r"(out)
		: "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		  "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
		  "xmm14", "xmm15", "memory", "cc");
	return memcmp(in, out, sizeof(in)) == 0;
}

#define X_IN(n) "movdqu " #n "*16(%[in]), %%xmm" #n "\n"
#define X_OP(n) "paddq %%xmm15, %%xmm" #n "\n psubq %%xmm15, %%xmm" #n "\n"
#define X_OUT(n) "movdqu %%xmm" #n ", " #n "*16(%[out])\n"

static int xmm_survive(void)
{
	uint64_t in[16][2], out[16][2];

	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 2; j++)
			in[i][j] = (uint64_t)(i * 2 + j + 1) * 0x0101010101ull;
	__asm__ volatile(
		X_IN(0) X_IN(1) X_IN(2) X_IN(3) X_IN(4) X_IN(5) X_IN(6) X_IN(7)
		X_IN(8) X_IN(9) X_IN(10) X_IN(11) X_IN(12) X_IN(13) X_IN(14)
		X_IN(15)
		"mov $" ROUNDS ", %%rcx\n"
		"1:\n"
		X_OP(0) X_OP(1) X_OP(2) X_OP(3) X_OP(4) X_OP(5) X_OP(6) X_OP(7)
		X_OP(8) X_OP(9) X_OP(10) X_OP(11) X_OP(12) X_OP(13) X_OP(14)
		"dec %%rcx\n"
		"jnz 1b\n"
		X_OUT(0) X_OUT(1) X_OUT(2) X_OUT(3) X_OUT(4) X_OUT(5) X_OUT(6)
		X_OUT(7) X_OUT(8) X_OUT(9) X_OUT(10) X_OUT(11) X_OUT(12)
		X_OUT(13) X_OUT(14) X_OUT(15)
		:
		: [in] "r"(in), [out] "r"(out)
		: "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		  "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
		  "xmm14", "xmm15", "memory", "cc");
	return memcmp(in, out, sizeof(in)) == 0;
}

#elif defined(__aarch64__)
#define V_IN(n) "ldr q" #n ", [%[in], #" #n "*16]\n"
#define V_OP(n) "add v" #n ".2d, v" #n ".2d, v31.2d\n" \
		"sub v" #n ".2d, v" #n ".2d, v31.2d\n"
#define V_OUT(n) "str q" #n ", [%[out], #" #n "*16]\n"

/* aarch64: v0-v31 (the low 128 bits of SVE's z registers) */
static int v_survive(void)
{
	uint64_t in[32][2], out[32][2];

	for (int i = 0; i < 32; i++)
		for (int j = 0; j < 2; j++)
			in[i][j] = (uint64_t)(i * 2 + j + 1) * 0x0101010101ull;
	__asm__ volatile(
		V_IN(0) V_IN(1) V_IN(2) V_IN(3) V_IN(4) V_IN(5) V_IN(6) V_IN(7)
		V_IN(8) V_IN(9) V_IN(10) V_IN(11) V_IN(12) V_IN(13) V_IN(14)
		V_IN(15) V_IN(16) V_IN(17) V_IN(18) V_IN(19) V_IN(20) V_IN(21)
		V_IN(22) V_IN(23) V_IN(24) V_IN(25) V_IN(26) V_IN(27) V_IN(28)
		V_IN(29) V_IN(30) V_IN(31)
		"mov x9, #" ROUNDS_LO "\n"
		"movk x9, #" ROUNDS_HI ", lsl #16\n"
		"1:\n"
		V_OP(0) V_OP(1) V_OP(2) V_OP(3) V_OP(4) V_OP(5) V_OP(6) V_OP(7)
		V_OP(8) V_OP(9) V_OP(10) V_OP(11) V_OP(12) V_OP(13) V_OP(14)
		V_OP(15) V_OP(16) V_OP(17) V_OP(18) V_OP(19) V_OP(20) V_OP(21)
		V_OP(22) V_OP(23) V_OP(24) V_OP(25) V_OP(26) V_OP(27) V_OP(28)
		V_OP(29) V_OP(30)
		"subs x9, x9, #1\n"
		"b.ne 1b\n"
		V_OUT(0) V_OUT(1) V_OUT(2) V_OUT(3) V_OUT(4) V_OUT(5) V_OUT(6)
		V_OUT(7) V_OUT(8) V_OUT(9) V_OUT(10) V_OUT(11) V_OUT(12)
		V_OUT(13) V_OUT(14) V_OUT(15) V_OUT(16) V_OUT(17) V_OUT(18)
		V_OUT(19) V_OUT(20) V_OUT(21) V_OUT(22) V_OUT(23) V_OUT(24)
		V_OUT(25) V_OUT(26) V_OUT(27) V_OUT(28) V_OUT(29) V_OUT(30)
		V_OUT(31)
		:
		: [in] "r"(in), [out] "r"(out)
		: "x9", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8",
		  "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17",
		  "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26",
		  "v27", "v28", "v29", "v30", "v31", "memory", "cc");
	return memcmp(in, out, sizeof(in)) == 0;
}
#else
#error "vecvictim.c: no vector registers listed for this CPU"
#endif

int mwi_vector_victim(void)
{
#if defined(__x86_64__)
	const char *which = "xmm";
	int (*check)(void) = xmm_survive;
	unsigned long blocks = 0;

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		which = "zmm";
		check = zmm_survive;
	} else if (__builtin_cpu_supports("avx2")) {
		which = "ymm";
		check = ymm_survive;
	}
#else
	const char *which = "v";
	int (*check)(void) = v_survive;
	unsigned long blocks = 0;
#endif
	printf("ready %s\n", which);
	fflush(stdout);
	while (!stdin_done()) {
		if (!check()) {
			printf("CORRUPT %s after %lu blocks\n", which, blocks);
			fflush(stdout);
			return 1;
		}
		blocks++;
	}
	printf("ok %lu\n", blocks);
	return 0;
}
