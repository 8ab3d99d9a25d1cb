/* SPDX-License-Identifier: MIT */
/* answer_lib.c - the library tests/arm64/test_inject_calls.py injects
 * into C targets: answer(ARG) returns strlen(ARG) + 40 and records that
 * it ran, which answer_count() reports. */
#include <string.h>

static int calls;

int answer(const char *arg)
{
	calls++;
	return (int)strlen(arg) + 40;
}

int answer_count(const char *arg)
{
	(void)arg;
	return calls;
}
