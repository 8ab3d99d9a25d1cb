/* SPDX-License-Identifier: MIT */
/* fork.h - a child keeps working tables.
 *
 * fork() copies only the calling thread.  A lock another thread held at
 * that moment (a live-table shard, site creation, liburcu's registry) would
 * stay held in the child for ever, and the child's next allocation would
 * spin on it: a preloaded process that forks while other threads allocate
 * hung in 84 of 200 children.  Around fork we take every lock of ours, and
 * liburcu's through its own fork functions, so the child starts with all
 * of them free and consistent.
 */
#ifndef MW_FORK_H
#define MW_FORK_H

/* Registers the fork handlers (once; later calls only set @child_then).
 * @child_then, if not NULL, runs last in the child, every lock free
 * (attach mode: the child detaches itself); else the child keeps
 * tracing.
 * Context: not a hook; after mw_sites_init. */
void mw_fork_init(void (*child_then)(void));

#endif
