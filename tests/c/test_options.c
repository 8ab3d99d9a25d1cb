/* SPDX-License-Identifier: MIT */
/* Unit tests for the MWRAP= option parser (preload/base/options.c). */
#include <errno.h>
#include <string.h>

#include "base/options.h"
#include "tap.h"

static struct mw_options o;
static char err[160];

static int parse(const char *s)
{
	return mw_options_parse(s, &o, err, sizeof(err));
}

static void test_defaults(void)
{
	ok(parse(NULL) == 0, "NULL is defaults");
	ok(o.dump_fd == -1 && o.dump_path[0] == 0 && o.dump_min == 0,
	   "defaults: no dump");
	ok(!mw_options_want_dump(&o), "defaults want no dump");
	ok(parse("") == 0, "empty string is defaults");
}

static void test_valid(void)
{
	ok(parse("dump_fd:5") == 0 && o.dump_fd == 5, "dump_fd:5");
	ok(parse("dump_min:10000,dump_fd:1") == 0 && o.dump_fd == 1 &&
		   o.dump_min == 10000,
	   "dump_fd accepted after another option");
	ok(parse("dump_path:/tmp/x.dump,dump_min:7") == 0 &&
		   strcmp(o.dump_path, "/tmp/x.dump") == 0 && o.dump_min == 7,
	   "dump_path runs to the comma");
	ok(parse("dump_heap:5") == 0 && o.dump_heap == 5, "dump_heap:5");
	ok(parse("dump_format:json") == 0 && o.format == MW_FORMAT_JSON,
	   "dump_format:json");
	ok(parse("dump_fd:2,") == 0 && o.dump_fd == 2, "trailing comma");
	ok(parse("sample:65536") == 0 && o.sample == 65536, "sample:65536");
	ok(parse("stacks:8,stack_sample:4096") == 0 && o.stack_sample == 4096 &&
		   o.sample == 0 && o.stacks == 8, "stack_sample:4096");
	ok(parse("stack_sample:-1") == -EINVAL &&
		   parse("stack_sample:2000000000000") == -EINVAL,
	   "bad stack sample sizes refused");
	ok(parse("sample:x") == -EINVAL && parse("sample:") == -EINVAL,
	   "bad sample sizes refused");
	ok(parse("stacks:16") == 0 && o.stacks == 16, "stacks:16");
	ok(parse("stacks:64") == 0 && o.stacks == 64 && parse("stacks:0") == 0 &&
		   o.stacks == 0, "stacks:64 and stacks:0");
	ok(parse("stacks:65") == -EINVAL && parse("stacks:") == -EINVAL &&
		   parse("stacks:-1") == -EINVAL, "bad stack depths refused");
	ok(parse("lease:10") == 0 && o.lease == 10, "lease:10");
	ok(parse("lease:86401") == -EINVAL && parse("lease:") == -EINVAL,
	   "bad leases refused");
	ok(parse("staged:1,lease:10") == 0 && o.staged == 1 &&
		   parse("") == 0 && o.staged == 0, "staged:1, off by default");
	ok(parse("staged:2") == -EINVAL && parse("staged:") == -EINVAL,
	   "staged other than 0 or 1 refused");
	ok(parse("dump_fd:0") == 0 && !mw_options_want_dump(&o),
	   "dump_fd:0 means no dump");
	ok(parse("dump_min:18446744073709551615") == 0 &&
		   o.dump_min == 18446744073709551615ull,
	   "dump_min at UINT64_MAX");
}

static void test_invalid(void)
{
	ok(parse("dump_fd:x") == -EINVAL && strstr(err, "dump_fd:x"),
	   "non-numeric dump_fd names the option: %s", err);
	ok(o.dump_fd == -1, "failed parse leaves defaults");
	ok(parse("dump_fd:") == -EINVAL, "empty number");
	ok(parse("dump_fd:-1") == -EINVAL, "negative number");
	ok(parse("dump_fd:99999999999") == -EINVAL, "dump_fd beyond int");
	ok(parse("dump_min:18446744073709551616") == -EINVAL,
	   "dump_min overflow");
	ok(parse("dump_min:12a") == -EINVAL, "trailing garbage");
	ok(parse("bogus:1") == -EINVAL && strstr(err, "unknown option") &&
		   strstr(err, "bogus"),
	   "unknown option named: %s", err);
	ok(parse("dump_fd") == -EINVAL && strstr(err, "':VALUE'"),
	   "missing value: %s", err);
	ok(parse("dump_path:") == -EINVAL, "empty dump_path");
	ok(parse("dump_heap:8") == -EINVAL, "dump_heap mask out of range");
	ok(parse("dump_format:xml") == -EINVAL, "unknown format");
	ok(parse("dump_fd:1,dump_min:1,zz") == -EINVAL && o.dump_fd == -1,
	   "error after valid options resets everything");
}

static void test_long_input(void)
{
	char big[PATH_MAX + 64];

	memcpy(big, "dump_path:", 10);
	memset(big + 10, 'a', sizeof(big) - 11);
	big[sizeof(big) - 1] = 0;
	ok(parse(big) == -EINVAL, "over-long dump_path refused");
	ok(strlen(err) < sizeof(err), "message bounded (%zu)", strlen(err));
}

int main(void)
{
	test_defaults();
	test_valid();
	test_invalid();
	test_long_input();
	return tap_done();
}
