// SPDX-License-Identifier: MIT
/* One subtest per basic outcome, for the runner's and the framework's tests. */
#include "core.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

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

static void segv_now(void *arg)
{
	(void)arg;
	raise(SIGSEGV);
}

static void return_quietly(void *arg)
{
	(void)arg;
}

static void sleep_long(void *arg)
{
	(void)arg;
	pause();
}

static void child_segv(void *fx)
{
	(void)fx;
	gc_expect_child_signal(segv_now, NULL, SIGSEGV, 10000);
}

static void child_survives(void *fx)
{
	(void)fx;
	gc_expect_child_signal(return_quietly, NULL, SIGSEGV, 10000);
}

static void child_hangs(void *fx)
{
	(void)fx;
	gc_expect_child_signal(sleep_long, NULL, SIGSEGV, 100);
}

static void *fail_in_thread(void *arg)
{
	gc_assert_f(arg == NULL, "selftest: a helper thread's assertion failed");
	return NULL;
}

static void thread_fail(void *fx)
{
	static int not_null;
	pthread_t t;

	(void)fx;
	gc_assert_eq_int(pthread_create(&t, NULL, fail_in_thread, &not_null), 0);
	pthread_join(t, NULL);
	gc_fail("unreachable: the thread's failure ends the process");
}

static const struct gc_subtest subtests[] = {
	{ "pass", pass, "asserts a truth" },
	{ "fail", fail, "asserts 5 == 4: fails, printing both values" },
	{ "skip", skip, "skips with a formatted reason" },
	{ "crash-segv", crash_segv, "dies of SIGSEGV" },
	{ "crash-abort", crash_abort, "dies of SIGABRT" },
	{ "abort", do_abort, "aborts the whole binary (exit 112)" },
	{ "child-segv", child_segv, "a forked child dies of SIGSEGV as required: success" },
	{ "child-survives", child_survives, "a child required to die of SIGSEGV exits 0: fails" },
	{ "child-hangs", child_hangs, "a child required to die of SIGSEGV hangs: killed, fails" },
	{ "thread-fail", thread_fail, "an assertion fails in a helper thread: FAIL, exit 98" },
	{ 0 }
};

GC_MAIN(.name = "selftest_results", .description = "basic outcomes", .subtests = subtests)
