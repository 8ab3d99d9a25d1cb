/* SPDX-License-Identifier: MIT */
/* syscalls_aarch64.c - syscalls.h's per-libc list on aarch64: whether
 * the target's glibc makes clone3 (the lists themselves are
 * syscalls.def's). */
#include "process/syscalls.h"
#include "base/elfsym.h"
#include "process/maps.h"

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>

#define REQ MWI_SC_REQUIRED
#define OPT MWI_SC_OPTIONAL

/* glibc's clone3 wrapper (sysdeps/unix/sysv/linux/aarch64/clone3.S):
 * "mov x8, #435; svc #0", in no libc that lacks it (Debian 12's 2.36 has
 * no "mov x8, #435" at all: pthread_create, _Fork and posix_spawn make
 * clone, 220).  1 when the target's libc has it, 0 when it has not,
 * -errno when the libc cannot be read. */
static int libc_makes_clone3(pid_t pid)
{
	static const unsigned char code[] = {
		0x68, 0x36, 0x80, 0xd2,	/* mov x8, #435 (clone3) */
		0x01, 0x00, 0x00, 0xd4,	/* svc #0 */
	};
	static struct mwi_maps m;
	char path[PATH_MAX + 32];
	uint64_t at;
	int ret = mwi_maps_read(pid, &m);

	if (ret)
		return ret;
	if (mwi_maps_local_file(pid, m.libc_path, m.libc_ino, path,
				sizeof(path)))
		return -ENOENT;
	ret = mwi_elf_find_code(path, code, sizeof(code), &at);
	return ret == -ENOENT ? 0 : ret ? ret : 1;
}

const struct mwi_sc_call *mwi_sc_calls_for(pid_t pid)
{
	static struct mwi_sc_call calls[MWI_SC_MAX_CALLS];
	int clone3 = libc_makes_clone3(pid), i;

	for (i = 0; mwi_sc_calls[i].name; i++) {
		calls[i] = mwi_sc_calls[i];
		if (clone3 == 1)
			continue;	/* the table's pair */
		if (calls[i].nr == SYS_clone) {
			calls[i].need = REQ;
			calls[i].effect = clone3 ? "no helper thread (which "
				"of clone3 and clone this libc makes is "
				"unknown)" : "no helper thread";
		} else if (calls[i].nr == SYS_clone3 && !clone3) {
			calls[i].need = OPT;
			calls[i].effect = "none: this libc makes clone";
		}
	}
	calls[i] = mwi_sc_calls[i];	/* the end */
	return calls;
}
