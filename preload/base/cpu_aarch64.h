/* SPDX-License-Identifier: MIT */
/* cpu_aarch64.h - base/cpu.h for aarch64 (arm64). */
#ifndef MW_CPU_AARCH64_H
#define MW_CPU_AARCH64_H

#include <elf.h>

/* A spin-wait hint.  Context: anywhere. */
#define mw_cpu_relax() __asm__ __volatile__("yield" ::: "memory")

/* The relocations of GOT slots that hold a function's address: PLT
 * slots, and -fno-plt's / an address taken through the GOT.  (A
 * pointer to malloc stored in data, R_AARCH64_ABS64, is left alone, as
 * R_X86_64_64 is on x86-64.) */
#define MW_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define MW_R_GLOB_DAT R_AARCH64_GLOB_DAT

#endif
