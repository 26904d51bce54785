// SPDX-License-Identifier: MIT
/* One subtest per basic outcome, for the runner's and the framework's tests. */
#include "core.h"

#include <signal.h>
#include <stdlib.h>

static void pass(void *fx)
{
	(void)fx;
	gc_assert_eq_int(2 + 2, 4);
}

static void fail(void *fx)
{
	int got = 5;

	(void)fx;
	gc_assert_cmpint(got, ==, 4);
}

static void skip(void *fx)
{
	(void)fx;
	gc_skip("selftest: skipped on purpose (%d)", 42);
}

static void crash_segv(void *fx)
{
	(void)fx;
	raise(SIGSEGV);
}

static void crash_abort(void *fx)
{
	(void)fx;
	abort();
}

static void do_abort(void *fx)
{
	(void)fx;
	gc_abort("selftest: the system is in no state to go on");
}

static const struct gc_subtest subtests[] = {
	{ "pass", pass, "asserts a truth" },
	{ "fail", fail, "asserts 5 == 4: fails, printing both values" },
	{ "skip", skip, "skips with a formatted reason" },
	{ "crash-segv", crash_segv, "dies of SIGSEGV" },
	{ "crash-abort", crash_abort, "dies of SIGABRT" },
	{ "abort", do_abort, "aborts the whole binary (exit 112)" },
	{ 0 }
};

GC_MAIN(.name = "selftest_results", .description = "basic outcomes", .subtests = subtests)
