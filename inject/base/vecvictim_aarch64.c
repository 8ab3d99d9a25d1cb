/* SPDX-License-Identifier: MIT */
/* vecvictim_aarch64.c - vecvictim.h's registers on aarch64: v0-v31. */
#include "base/vecvictim.h"

#include <stdint.h>
#include <string.h>

/* Each block runs 20,000,000 rounds (a few hundred ms; an interruption
 * nearly always lands inside one), as the two 16-bit halves of a mov
 * and a movk: 0x131 << 16 | 0x2d00. */
#define ROUNDS_LO "0x2d00"
#define ROUNDS_HI "0x131"

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

mwi_vector_check mwi_vector_check_for_cpu(const char **which)
{
	*which = "v";
	return v_survive;
}
