/* SPDX-License-Identifier: MIT */
/* jitsyms.h - finds the JIT's text in libruby (core/jit.h) from its
 * symbols.
 */
#ifndef MW_JITSYMS_H
#define MW_JITSYMS_H

/* Reads the symbol table of the object that holds Ruby (libruby, or the
 * program when Ruby is linked in) and gives core/jit.h the extent of its
 * Rust functions: the JIT crates YJIT (3.2 on) and ZJIT (4.0 on) are the
 * only Rust in Ruby, linked with the Rust runtime they use as one
 * static library, so their code is one run of the object's text.  No
 * range (the JIT's allocations are then charged as before) when the
 * object has no .symtab (a stripped libruby), or its Rust functions are
 * not one run (a C function of Ruby's among them).  Returns 1 when a
 * range was set.  Idempotent.
 * Context: not a hook (file reads); before tracking is enabled. */
int mw_jit_find(void);

#endif
