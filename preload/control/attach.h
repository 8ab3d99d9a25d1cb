/* SPDX-License-Identifier: MIT */
/* attach.h - late mode's life cycle, beside the exported mw_attach and
 * mw_detach (inject_abi.h).
 */
#ifndef MW_ATTACH_H
#define MW_ATTACH_H

/* 1 while a late attach is active (from mw_attach's start until its
 * helper has undone everything), else 0.  Context: any; never blocks. */
int mw_attach_active(void);

#endif
