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

/* The getter aarch64 Ruby 3.3+ calls for GET_EC() (rb_current_ec): a
 * leaf that returns the variable, not exported. */
__attribute__((noipa, visibility("hidden"))) void *ec_get(void)
{
	return test_ec;
}

/* reads the variable through that call first, as rb_profile_frames does
 * on aarch64 from 3.3 (then uses what it got: a call, not a jump) */
__attribute__((noipa)) void *ec_read_by_call(void)
{
	void *ec = ec_get();

	return ec ? (char *)ec + 1 : 0;
}

__attribute__((noipa)) void ec_touch(void)
{
	__asm__ volatile("");
}

/* not a getter: it calls something else before it reads the variable */
__attribute__((noipa, visibility("hidden"))) void *ec_get_after_call(void)
{
	ec_touch();
	return test_ec;
}

/* its first call leads to no getter: nothing to decode */
__attribute__((noipa)) void *ec_read_by_other_call(void)
{
	void *ec = ec_get_after_call();

	return ec ? (char *)ec + 1 : 0;
}
