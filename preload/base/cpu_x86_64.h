/* SPDX-License-Identifier: MIT */
/* cpu_x86_64.h - base/cpu.h for x86-64. */
#ifndef MW_CPU_X86_64_H
#define MW_CPU_X86_64_H

#include <elf.h>

/* A spin-wait hint.  Context: anywhere. */
#define mw_cpu_relax() __builtin_ia32_pause()

/* The relocations of GOT slots that hold a function's address: lazy or
 * bound PLT slots, and -fno-plt's / an address taken through the GOT. */
#define MW_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define MW_R_GLOB_DAT R_X86_64_GLOB_DAT

#endif
