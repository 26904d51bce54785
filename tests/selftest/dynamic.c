// SPDX-License-Identifier: MIT
/* Dynamic subtests: the parent's result follows from its children's. */
#include "core.h"

static void dyn_pass(void *arg)
{
	(void)arg;
}

static void dyn_fail(void *arg)
{
	gc_assert_eq_int(*(int *)arg, 0);
}

static void dyn_skip(void *arg)
{
	gc_skip("dynamic skip %d", *(int *)arg);
}

static void mixed(void *fx)
{
	int one = 1, two = 2;

	(void)fx;
	gc_dynamic("pass-0", dyn_pass, NULL);
	gc_dynamic_f(dyn_fail, &one, "fail-%d", one);
	gc_dynamic_f(dyn_skip, &two, "skip-%d", two);
}

static void all_pass(void *fx)
{
	(void)fx;
	gc_dynamic("a", dyn_pass, NULL);
	gc_dynamic("b", dyn_pass, NULL);
}

static void bad_name(void *fx)
{
	(void)fx;
	gc_dynamic("has space", dyn_pass, NULL);
}

static const struct gc_subtest subtests[] = {
	{ "mixed", mixed, "pass-0 passes, fail-1 fails, skip-2 skips: the parent fails" },
	{ "all-pass", all_pass, "a and b pass: the parent passes" },
	{ "filtered", all_pass, "like all-pass; with --dynamic-subtest matching neither, it skips" },
	{ "bad-name", bad_name, "an invalid dynamic name fails the parent" },
	{ 0 }
};

GC_MAIN(.name = "selftest_dynamic", .subtests = subtests)
