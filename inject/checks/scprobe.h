/* SPDX-License-Identifier: MIT */
/* scprobe.h - what our own seccomp filter does with each syscall an
 * attach makes, found by making it in a child of ours: a target in our
 * own container, with as many filters as we have, runs under the chain
 * the runtime gave us both, so what happens to the child is what would
 * happen to the target. */
#ifndef MWI_SCPROBE_H
#define MWI_SCPROBE_H

#include "checks/bpfeval.h"

/* Probes every syscall of mwi_sc_calls in children of ours (a child
 * killed by one is replaced by another that goes on after it) and fills
 * @res, one entry per syscall.  0 or -errno.
 * Context: forks; each child's syscalls are harmless (closed fds,
 * names that do not exist, its own memory). */
int mwi_sc_probe_all(struct mwi_sc_result *res);

#endif
