/* SPDX-License-Identifier: MIT */
/* staged.h - a copy of this library that mwrap-attach made for one
 * process: removed by that process when it exits.
 *
 * When a target cannot read libmwrap.so where it is (another user,
 * another mount namespace), the front end copies it and its liburcu
 * into a new directory under the target's /tmp, and hands the directory
 * over to the target's user once the library is loaded from it (it was
 * root's until then: root never writes into a directory that user
 * controls).  The copy is needed while the process lives: a later
 * attach reuses the loaded library by its name, and the injector reads
 * its symbols from that file.  When the process exits nothing needs it
 * any more, and nothing but the process itself is left to remove it.
 * The attach option staged:1 says the library is such a copy.
 */
#ifndef MW_STAGED_H
#define MW_STAGED_H

/* Arranges for this library's directory (the one it was loaded from)
 * to be emptied of libmwrap.so and liburcu* and removed when the
 * calling process exits by exit(); a fork child leaves it alone (its
 * parent, the process it was made for, may still use it).  What else
 * the directory holds stays, and so does the directory then.  Once per
 * process: later calls do nothing.  Best effort: a directory not handed
 * over (the front end died first) cannot be emptied by a process of
 * another user, and is left.
 * Context: the helper thread at attach; no allocation. */
void mw_staged_arm(void);

#endif
