/* SPDX-License-Identifier: MIT */
/* export.h - the mark of a symbol other objects may bind to.
 *
 * The library is built with -fvisibility=hidden: only what carries
 * EXPORT is in its dynamic symbol table (the C API of mwrap.h, the
 * malloc family that interposes on libc's, and what the injector reads
 * or calls: inject_abi.h).
 */
#ifndef MW_EXPORT_H
#define MW_EXPORT_H

#define EXPORT __attribute__((visibility("default")))

#endif
