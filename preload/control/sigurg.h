/* SPDX-License-Identifier: MIT */
/* sigurg.h - SIGURG as a dump trigger.
 *
 * The handler only writes to an eventfd (async-signal-safe); the helper
 * thread does the dump.  The previous disposition is kept and chained
 * to.  If the application installs its own handler later (Ruby's
 * trap("URG")), mw_urg_check() puts ours back in front and chains to
 * theirs.
 */
#ifndef MW_SIGURG_H
#define MW_SIGURG_H

/* Has the handler call @fn, instead of waking the helper, for a SIGURG
 * this process queued to itself (sigqueue, SI_QUEUE) with @marker in
 * si_value.  One marker at a time.  @fn must be async-signal-safe.
 * Context: before mw_urg_install, on the thread that installs. */
void mw_urg_on_queued(int marker, void (*fn)(void));

/* Installs our handler, which writes 1 to @efd.  Returns 0 or -errno.
 * Context: helper thread. */
int mw_urg_install(int efd);
/* Re-installs ours if someone replaced it.  Context: helper thread. */
void mw_urg_check(void);
/* Puts back the disposition we replaced, unless someone replaced ours.
 * Context: helper thread, or a fork child's atfork handler. */
void mw_urg_restore(void);

#endif
