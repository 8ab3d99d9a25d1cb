/* SPDX-License-Identifier: MIT */
/* Unit test of the seccomp probes (inject/checks/scprobe.c): every syscall of
 * syscalls.def has a probe, so its result is known.  A syscall listed
 * without one stays unknown, and fails here.  What each result is
 * depends on the filter we run under (none on a plain host; qemu-user
 * answers ENOSYS for some): printed, not judged. */
#include "checks/scprobe.h"
#include "process/syscalls.h"

#include "tap.h"

int main(void)
{
	static struct mwi_sc_result res[MWI_SC_MAX_CALLS];
	int i;

	ok(mwi_sc_probe_all(res) == 0, "the probes ran");
	for (i = 0; mwi_sc_calls[i].name; i++) {
		ok(!res[i].unknown, "%s has a probe (action %d, errno %d)",
		   mwi_sc_calls[i].name, res[i].action, res[i].err);
	}
	return tap_done();
}
