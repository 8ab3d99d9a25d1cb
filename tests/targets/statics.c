/* SPDX-License-Identifier: MIT */
/* Native sites named by their function (tests/test_symbols.py): blocks
 * kept from a static function (in .symtab only, never in .dynsym), from
 * an exported one (-rdynamic puts it in .dynsym), and from code just past
 * the end of a sized function symbol (nothing covers it).  Each site
 * keeps its own block size, so a dump's figures tell them apart:
 *
 *   cache_grow (static)     300 x 1000 bytes
 *   exported_grow (global)  200 x 2000 bytes
 *   sized_short's end       100 x 3000 bytes
 *
 * Prints "ready", then on each "alloc" line from stdin allocates them all
 * and prints "allocated 600"; exits 0 on "exit" or at stdin's EOF.  A copy
 * with its .symtab stripped (build/targets/statics-stripped) runs the
 * same code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The function's symbol ends at its call's return address: the call is
 * its last instruction inside the symbol, the rest of its code has no
 * symbol at all.  A return address there is not sized_short's. */
void *sized_short(size_t n);
#if defined(__x86_64__)
__asm__(".text\n"
	".p2align 4\n"
	".type sized_short, @function\n"
	"sized_short:\n"
	"	sub $8, %rsp\n"
	"	call malloc@PLT\n"
	".size sized_short, .-sized_short\n"
	"	add $8, %rsp\n"
	"	ret\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".p2align 4\n"
	".type sized_short, %function\n"
	"sized_short:\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	mov x29, sp\n"
	"	bl malloc\n"
	".size sized_short, .-sized_short\n"
	"	ldp x29, x30, [sp], #16\n"
	"	ret\n");
#else
#error "sized_short: x86_64 and aarch64 only"
#endif

/* static: only .symtab names it; noinline and a size the compiler cannot
 * see keep it a function of its own (no clone, no inlining), memset keeps
 * malloc from being its tail call */
static __attribute__((noinline)) void *cache_grow(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 2, n);
	return p;
}

/* exported: .dynsym names it too (-rdynamic) */
__attribute__((noinline)) void *exported_grow(size_t n);
__attribute__((noinline)) void *exported_grow(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 3, n);
	return p;
}

int main(void)
{
	static void *keep[3][300];
	volatile size_t sizes[3] = { 1000, 2000, 3000 };
	char line[64];
	int i, kept;

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "exit\n")) {
		if (strcmp(line, "alloc\n"))
			continue;
		for (i = 0; i < 300; i++)
			keep[0][i] = cache_grow(sizes[0]);
		for (i = 0; i < 200; i++)
			keep[1][i] = exported_grow(sizes[1]);
		for (i = 0; i < 100; i++)
			keep[2][i] = sized_short(sizes[2]);
		for (i = kept = 0; i < 300; i++)
			kept += !!keep[0][i] + !!keep[1][i] + !!keep[2][i];
		printf("allocated %d\n", kept);
	}
	return 0;
}
