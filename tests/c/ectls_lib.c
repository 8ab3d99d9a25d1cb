/* SPDX-License-Identifier: MIT */
/* ectls_lib.c - a TLS variable read as libruby reads ruby_current_ec
 * (tests/c/test_ectls.c): built -fPIC as is (x86-64: general dynamic;
 * aarch64: a TLS descriptor) and with -ftls-model=initial-exec. */
__thread void *test_ec;

/* reads the variable first, as rb_profile_frames does */
__attribute__((noinline)) void *ec_read(void)
{
	return test_ec;
}

void **ec_where(void)
{
	return &test_ec;
}
