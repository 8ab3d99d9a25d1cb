/* SPDX-License-Identifier: MIT */
/* A small library for tests/c/test_elfsym.c: a function, an object, an
 * import, and code bytes found nowhere else. */
#include <stdio.h>

int mwt_object = 42;

int mwt_function(int x)
{
	return x * 0x13572468 + 0x2468ace0;
}

void mwt_imports(void)
{
	puts("mwt");
}
