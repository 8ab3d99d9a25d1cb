/* SPDX-License-Identifier: MIT */
/* readvictim.h - the victim of the gdb probe's blocked-thread check.
 *
 * Debian 12's gdb 13.1 on a CPU with AMX cannot write the extended
 * state back after a call into a thread blocked in a system call: the
 * call returns errno 512 and the process dies.  The probe
 * (scripts/lib/mwrap_attach/gdb_check.rb) calls into this victim while
 * it is blocked in read().  Not cat: a cat may map no C library at all
 * (a static busybox, as Debian's busybox-static), and the probe needs
 * one to call into; mwrap-inject maps the front end's own.
 */
#ifndef MWI_READVICTIM_H
#define MWI_READVICTIM_H

/* mwrap-inject --read-victim: reads standard input with read(2) until
 * it closes, writing what each read returned to standard output; 0
 * when every read and write succeeded, else says why on standard error
 * and returns 1 (a read interrupted by a broken inferior call). */
int mwi_read_victim(void);

#endif
