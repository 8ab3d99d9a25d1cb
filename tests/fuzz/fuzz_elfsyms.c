/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the dump's ELF reader takes whatever file a loaded
 * object's path names (a file replaced under a running process, a
 * broken one): it must never crash, read out of bounds or hand back a
 * table whose lookups do. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/elfsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mw_elf_syms t;
	const uint8_t *id;
	uint64_t off;
	uint32_t i;
	int fd = memfd_create("fuzz_elfsyms", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	if (mw_elf_syms_read(fd, NULL, &t) == 0) {
		for (i = 0; i < t.n; i++) {
			uint64_t at = t.func[i].start;
			const char *n = mw_elf_syms_find(&t, at, &off);

			/* in order, and a function's start is its own */
			if (!n || off || (i && t.func[i - 1].start >= at))
				abort();
			(void)strlen(n);
		}
		mw_elf_syms_find(&t, 0, &off);
		mw_elf_syms_find(&t, UINT64_MAX, &off);
		mw_elf_syms_free(&t);
	} else if (t.map || t.n) {
		abort();	/* a failure leaves nothing */
	}
	close(fd);
	/* the same bytes as notes */
	if (mw_elf_build_id(data, size, 4, &id) > MW_ELF_BUILD_ID_MAX)
		abort();
	return 0;
}
