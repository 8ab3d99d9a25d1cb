/* SPDX-License-Identifier: MIT */
/* rbpos_arch.h - where Ruby 3.2+ keeps ruby_current_ec, read from
 * libruby's compiled code: the part of rbabi.c that depends on the CPU,
 * one file per architecture (rbpos_x86_64.c, rbpos_aarch64.c; the
 * Makefile builds the compiler's). */
#ifndef MW_RBPOS_ARCH_H
#define MW_RBPOS_ARCH_H

/* __tls_get_addr's argument (glibc's tls_index on x86-64 and aarch64):
 * a TLS variable is at @offset in module @module's block of each thread. */
struct tls_index {
	unsigned long module;
	unsigned long offset;
};

/* Ruby 3.2+ does not export ruby_current_ec, but its functions reach it
 * by one of the TLS access sequences the CPU's ABI fixes.  The first one
 * in the code at @fn (rb_profile_frames, which reads only the EC) names
 * it: 1 with *ti filled in (module non-zero), or 0 when none is found
 * (*ti unchanged): the caller then does without (rbpos.c's slower path).
 * Context: rbabi.c's lookup (mw_ruby_init) only, on a thread of the
 * process, never in a hook (aarch64: it may run the TLS descriptor's
 * resolver, which may allocate this thread's block of the module). */
int mw_rbpos_ec_from_code(const unsigned char *fn, struct tls_index *ti);

#endif
