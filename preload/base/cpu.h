/* SPDX-License-Identifier: MIT */
/* cpu.h - the few facts about the CPU that preload/'s inline code needs
 * (a spin-wait hint, the GOT's relocation types), one header per
 * architecture (shared/DESIGN.md): cpu_x86_64.h, cpu_aarch64.h.  Larger
 * code that depends on the CPU is in one .c per architecture, picked by
 * the Makefile as inject/'s are: hook/trampoline_ARCH.c (the return of
 * injected calls), core/rbpos_ARCH.c (Ruby's EC in compiled code). */
#ifndef MW_CPU_H
#define MW_CPU_H

#if defined(__x86_64__)
#include "base/cpu_x86_64.h"
#elif defined(__aarch64__)
#include "base/cpu_aarch64.h"
#else
#error "preload/: no base/cpu_*.h for this CPU (x86_64 and aarch64 are done)"
#endif

#endif
