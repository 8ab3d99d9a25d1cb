/* SPDX-License-Identifier: MIT */
#include <sys/mman.h>

#include "core/sizedcache.h"

void *mw_sized_cache_for(void **published, void *cur, uint64_t want,
			 size_t head, size_t slot, unsigned min_bits,
			 unsigned max_bits, uint64_t *mapped)
{
	unsigned bits = cur ? *(unsigned *)cur : min_bits;
	size_t len;
	void *c;

	if (cur && ((1ull << bits) >= want || bits >= max_bits))
		return cur;
	while ((1ull << bits) < want && bits < max_bits)
		bits++;
	len = head + slot * ((size_t)1 << bits);
	c = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED)
		return cur;
	*(unsigned *)c = bits;
	if (!__atomic_compare_exchange_n(published, &cur, c, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(c, len);		/* another Ractor's came first */
		return cur;
	}
	__atomic_add_fetch(mapped, len, __ATOMIC_RELAXED);
	return c;
}
