/* SPDX-License-Identifier: MIT */
/* vecvictim.h - the victim of the gdb probe's vector check.
 *
 * A gdb that calls into a running thread must give it back every
 * register it had, the extended state included.  Debian 12's gdb 13.1
 * writes the AVX-512 components back where Intel's CPUs have them, which
 * is not where every CPU has them (CPUID leaf 0xd says where): a thread
 * in an EVEX memcpy (which keeps its data in zmm16-31) then copied
 * zeros, until the gdb backend stopped letting gdb restore that state
 * (gdb/attach.py).  mwrap-attach proves the gdb at hand, driven as an
 * attach drives it, on this victim before it lets gdb touch a target
 * (scripts/lib/mwrap_attach/gdb_check.rb).
 */
#ifndef MWI_VECVICTIM_H
#define MWI_VECVICTIM_H

/* mwrap-inject --vector-victim: holds known values in every vector
 * register the CPU has (zmm0-31 and k1-k7 with AVX-512F, else ymm0-15
 * with AVX2, else xmm0-15) through long loops with no system call,
 * checking them after each, in its one thread; prints "ready WHICH",
 * runs until standard input closes, then prints "ok BLOCKS" and returns
 * 0, or prints
 * "CORRUPT WHICH" and returns 1 at the first difference. */
int mwi_vector_victim(void);

/* One block: loads known values into the registers, runs the rounds,
 * stores and compares them; 1 when they came back unchanged. */
typedef int (*mwi_vector_check)(void);
/* This CPU's block (vecvictim_ARCH.c); *@which names its registers. */
mwi_vector_check mwi_vector_check_for_cpu(const char **which);

#endif
