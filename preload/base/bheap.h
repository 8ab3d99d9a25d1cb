/* SPDX-License-Identifier: MIT */
/* bheap.h - a binary heap kept in an array of fixed-size records, in
 * place: no allocation (qsort may malloc), so the dump and the pointer
 * scan can rank and sort with it.
 *
 * @above(a, b) says that record a belongs above record b: "greater"
 * makes a max-heap (and mw_bheap_sort ascending), "less" a min-heap.
 * Header-only, so that the compiler can inline @above.
 */
#ifndef MW_BHEAP_H
#define MW_BHEAP_H

#include <stddef.h>

typedef int (*mw_bheap_above)(const void *a, const void *b);

/* Context: any; pure. */
static inline void mw_bheap_swap(char *a, char *b, size_t size)
{
	while (size--) {
		char t = *a;

		*a++ = *b;
		*b++ = t;
	}
}

/* Moves record @i of the @n in @base down to its place.
 * Context: any; never allocates. */
static inline void mw_bheap_down(void *base, size_t size, size_t i, size_t n,
				 mw_bheap_above above)
{
	char *a = base;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && above(a + (c + 1) * size, a + c * size))
			c++;
		if (!above(a + c * size, a + i * size))
			return;
		mw_bheap_swap(a + i * size, a + c * size, size);
		i = c;
	}
}

/* Moves record @i up to its place (after it was added at the end).
 * Context: any; never allocates. */
static inline void mw_bheap_up(void *base, size_t size, size_t i,
			       mw_bheap_above above)
{
	char *a = base;

	while (i) {
		size_t p = (i - 1) / 2;

		if (!above(a + i * size, a + p * size))
			return;
		mw_bheap_swap(a + i * size, a + p * size, size);
		i = p;
	}
}

/* Heapsorts the @n records of @base so that none is above the one after
 * it (@base need not be a heap yet).
 * Context: any; never allocates. */
static inline void mw_bheap_sort(void *base, size_t size, size_t n,
				 mw_bheap_above above)
{
	char *a = base;
	size_t i;

	for (i = n / 2; i-- > 0;)
		mw_bheap_down(base, size, i, n, above);
	for (i = n; i-- > 1;) {
		mw_bheap_swap(a, a + i * size, size);
		mw_bheap_down(base, size, 0, i, above);
	}
}

#endif
