/* SPDX-License-Identifier: MIT */
/* rbpos_x86_64.c - rbpos_arch.h for x86-64 */
#include "core/rbpos_arch.h"

#include <stdint.h>
#include <string.h>

/* The general-dynamic TLS sequence, whose bytes the ABI fixes (so that
 * linkers may relax it): "lea tls_index(%rip),%rdi" with a data16
 * prefix, then "data16 data16 rex.W call __tls_get_addr". */
int mw_rbpos_ec_from_code(const unsigned char *fn, struct tls_index *out)
{
	static const unsigned char lea[] = { 0x66, 0x48, 0x8d, 0x3d };
	static const unsigned char call[] = { 0x66, 0x66, 0x48, 0xe8 };
	int i;

	for (i = 0; i < 64; i++) {
		const unsigned char *c = fn + i;
		const struct tls_index *ti;
		int32_t rel;

		if (memcmp(c, lea, sizeof(lea)) || memcmp(c + 8, call,
							  sizeof(call)))
			continue;
		memcpy(&rel, c + 4, sizeof(rel));
		ti = (const struct tls_index *)(c + 8 + rel);
		*out = *ti;
		return ti->module != 0;
	}
	return 0;
}
