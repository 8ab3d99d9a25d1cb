/* SPDX-License-Identifier: MIT */
/* vecvictim_x86_64.c - vecvictim.h's registers on x86-64: zmm0-31 and
 * k1-k7 with AVX-512F, else ymm0-15 with AVX2, else xmm0-15. */
#include "base/vecvictim.h"

#include <stdint.h>
#include <string.h>

/* Each block runs this many rounds (a few hundred ms): an interruption
 * nearly always lands inside one, with the values in the registers. */
#define ROUNDS "20000000"

/* Every register gets in[n], adds and subtracts the last one of its kind
 * (exact, in integers) ROUNDS times, and is stored to out[n]: out == in
 * unless something changed a register meanwhile.
 *
 * With AVX-512 the registers are held as an EVEX memcpy holds them:
 * zmm16-31 and k1-k7 live, ymm0-15 live through VEX (which zeroes their
 * upper halves), so that the upper halves of zmm0-15 stay in their
 * initial state (XSTATE_BV's ZMM_Hi256 bit clear) while zmm16-31's
 * (Hi16_ZMM) is set: the state in which gdb 13, writing at Intel's
 * offsets on a CPU that lays AVX-512 out otherwise, zeroed zmm16-19. */
#define Z_IN(n) "vmovdqu64 " #n "*64-1024(%[zin]), %%zmm" #n "\n"
#define Z_OP(n) "vpaddq %%zmm31, %%zmm" #n ", %%zmm" #n "\n" \
		"vpsubq %%zmm31, %%zmm" #n ", %%zmm" #n "\n"
#define Z_OUT(n) "vmovdqu64 %%zmm" #n ", " #n "*64-1024(%[zout])\n"
#define YV_IN(n) "vmovdqu " #n "*32(%[yin]), %%ymm" #n "\n"
#define YV_OP(n) "vpaddq %%ymm15, %%ymm" #n ", %%ymm" #n "\n" \
		"vpsubq %%ymm15, %%ymm" #n ", %%ymm" #n "\n"
#define YV_OUT(n) "vmovdqu %%ymm" #n ", " #n "*32(%[yout])\n"
#define K_IN(n) "kmovw " #n "*2(%[kin]), %%k" #n "\n"
#define K_OUT(n) "kmovw %%k" #n ", " #n "*2(%[kout])\n"

__attribute__((target("avx512f"))) static int zmm_survive(void)
{
	uint64_t zin[16][8] __attribute__((aligned(64)));
	uint64_t zout[16][8] __attribute__((aligned(64)));
	uint64_t yin[16][4], yout[16][4];
	uint16_t kin[8], kout[8];

	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 8; j++)
			zin[i][j] = (uint64_t)(i * 8 + j + 1) * 0x0101010101ull;
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 4; j++)
			yin[i][j] = (uint64_t)(i * 4 + j + 7) * 0x0303030303ull;
	for (int i = 0; i < 8; i++)
		kin[i] = kout[i] = (uint16_t)(0x1111 * i + 0x0f0f);
	__asm__ volatile(
		"vzeroupper\n"
		Z_IN(16) Z_IN(17) Z_IN(18) Z_IN(19) Z_IN(20) Z_IN(21) Z_IN(22)
		Z_IN(23) Z_IN(24) Z_IN(25) Z_IN(26) Z_IN(27) Z_IN(28) Z_IN(29)
		Z_IN(30) Z_IN(31)
		YV_IN(0) YV_IN(1) YV_IN(2) YV_IN(3) YV_IN(4) YV_IN(5) YV_IN(6)
		YV_IN(7) YV_IN(8) YV_IN(9) YV_IN(10) YV_IN(11) YV_IN(12)
		YV_IN(13) YV_IN(14) YV_IN(15)
		K_IN(1) K_IN(2) K_IN(3) K_IN(4) K_IN(5) K_IN(6) K_IN(7)
		"mov $" ROUNDS ", %%rcx\n"
		"1:\n"
		Z_OP(16) Z_OP(17) Z_OP(18) Z_OP(19) Z_OP(20) Z_OP(21) Z_OP(22)
		Z_OP(23) Z_OP(24) Z_OP(25) Z_OP(26) Z_OP(27) Z_OP(28) Z_OP(29)
		Z_OP(30)
		YV_OP(0) YV_OP(1) YV_OP(2) YV_OP(3) YV_OP(4) YV_OP(5) YV_OP(6)
		YV_OP(7) YV_OP(8) YV_OP(9) YV_OP(10) YV_OP(11) YV_OP(12)
		YV_OP(13) YV_OP(14)
		"dec %%rcx\n"
		"jnz 1b\n"
		Z_OUT(16) Z_OUT(17) Z_OUT(18) Z_OUT(19) Z_OUT(20) Z_OUT(21)
		Z_OUT(22) Z_OUT(23) Z_OUT(24) Z_OUT(25) Z_OUT(26) Z_OUT(27)
		Z_OUT(28) Z_OUT(29) Z_OUT(30) Z_OUT(31)
		YV_OUT(0) YV_OUT(1) YV_OUT(2) YV_OUT(3) YV_OUT(4) YV_OUT(5)
		YV_OUT(6) YV_OUT(7) YV_OUT(8) YV_OUT(9) YV_OUT(10) YV_OUT(11)
		YV_OUT(12) YV_OUT(13) YV_OUT(14) YV_OUT(15)
		K_OUT(1) K_OUT(2) K_OUT(3) K_OUT(4) K_OUT(5) K_OUT(6) K_OUT(7)
		"vzeroupper\n"
		:
		: [zin] "r"(zin), [zout] "r"(zout), [yin] "r"(yin),
		  [yout] "r"(yout), [kin] "r"(kin), [kout] "r"(kout)
		: "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
		  "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
		  "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20",
		  "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",
		  "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4",
		  "k5", "k6", "k7", "memory", "cc");
	return memcmp(zin, zout, sizeof(zin)) == 0 &&
	       memcmp(yin, yout, sizeof(yin)) == 0 &&
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

mwi_vector_check mwi_vector_check_for_cpu(const char **which)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		*which = "zmm";
		return zmm_survive;
	}
	if (__builtin_cpu_supports("avx2")) {
		*which = "ymm";
		return ymm_survive;
	}
	*which = "xmm";
	return xmm_survive;
}
