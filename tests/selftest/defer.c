// SPDX-License-Identifier: MIT
/*
 * gc_defer(): each cleanup prints a line, so the runner's tests
 * (runner/tests/test_defer.py) can assert the order in which they ran and the
 * verdict they left. The fixture's setup defers one cleanup too, which prints
 * after the last result line; with GPUCONFORM_SELFTEST_DEFER_SETUP_FAIL=1 the
 * setup fails after deferring it, so it runs at once.
 */
#include "core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* A cleanup that prints its label (a static string). */
static void say(void *label)
{
	gc_info("cleanup %s", (const char *)label);
}

static void say_then_fail(void *label)
{
	gc_info("cleanup %s", (const char *)label);
	gc_assert_f(0, "cleanup %s breaks on purpose", (const char *)label);
}

static void say_then_skip(void *label)
{
	gc_info("cleanup %s", (const char *)label);
	gc_skip("cleanup %s tries to skip", (const char *)label);
}

static void *fixture_setup(void)
{
	gc_defer(say, "fixture");
	if (getenv("GPUCONFORM_SELFTEST_DEFER_SETUP_FAIL"))
		gc_fail("setup fails on purpose (GPUCONFORM_SELFTEST_DEFER_SETUP_FAIL)");
	return NULL;
}

static void fixture_teardown(void *data)
{
	(void)data;
	gc_info("teardown");
}

static void lifo_pass(void *fx)
{
	(void)fx;
	gc_defer(say, "1");
	gc_defer(say, "2");
	gc_defer(say, "3");
	gc_info("body done");
}

static void lifo_assert(void *fx)
{
	(void)fx;
	gc_defer(say, "1");
	gc_defer(say, "2");
	gc_assert_eq_int(1 + 1, 3);
	gc_defer(say, "never deferred");
}

static void lifo_skip(void *fx)
{
	(void)fx;
	gc_defer(say, "1");
	gc_defer(say, "2");
	gc_skip("skipped after deferring two cleanups");
}

struct record {
	int value;
};

static void record_drop(void *arg)
{
	struct record *r = arg;

	gc_info("cleanup record %d", r->value);
	free(r);
}

static void calloc_record(void *fx)
{
	struct record *r = gc_defer_calloc(sizeof(*r), record_drop);

	(void)fx;
	gc_assert_eq_int(r->value, 0);
	r->value = 7;
	gc_defer(say, "after the record");
	gc_info("body done");
}

static void dyn_pass(void *arg)
{
	(void)arg;
	gc_defer(say, "pass-a");
	gc_defer(say, "pass-b");
}

static void dyn_fail(void *arg)
{
	(void)arg;
	gc_defer(say, "fail-a");
	gc_fail("dynamic fails on purpose");
}

static void dyn_bad_cleanup(void *arg)
{
	(void)arg;
	gc_defer(say, "bad-a");
	gc_defer(say_then_fail, "bad-b");
	gc_defer(say, "bad-c");
}

static void dynamic(void *fx)
{
	(void)fx;
	gc_defer(say, "subtest-1");
	gc_dynamic("pass", dyn_pass, NULL);
	gc_dynamic("fail", dyn_fail, NULL);
	gc_defer(say, "subtest-2");
	gc_dynamic("bad-cleanup", dyn_bad_cleanup, NULL);
	gc_info("subtest body done");
}

/* A passing body whose middle cleanup fails: the subtest fails, the first still runs. */
static void cleanup_fails(void *fx)
{
	(void)fx;
	gc_defer(say, "1");
	gc_defer(say_then_fail, "2");
	gc_defer(say, "3");
}

static void cleanup_skips(void *fx)
{
	(void)fx;
	gc_defer(say, "1");
	gc_defer(say_then_skip, "2");
}

/* The first cleanup deferred, so the last to run: prints how many ran before it. */
static void count_report(void *count)
{
	gc_info("cleanup count: %d ran before", *(int *)count);
	free(count);
}

static void count_one(void *count)
{
	(*(int *)count)++;
}

static void overflow(void *fx)
{
	int *count = calloc(1, sizeof(*count));

	(void)fx;
	gc_assert(count);
	gc_defer(count_report, count);
	for (int i = 2; i < GC_DEFER_MAX; i++) /* the fixture's setup holds one more */
		gc_defer(count_one, count);
	gc_info("%d deferred, with the fixture's", GC_DEFER_MAX);
	gc_defer(count_one, count); /* one too many */
	gc_info("not reached");
}

static void *defer_in_thread(void *arg)
{
	gc_defer(say, arg);
	return NULL;
}

static void thread(void *fx)
{
	pthread_t t;

	(void)fx;
	gc_defer(say, "main thread's");
	gc_assert_eq_int(pthread_create(&t, NULL, defer_in_thread, "helper thread's"), 0);
	pthread_join(t, NULL);
	gc_info("not reached");
}

static void defer_in_child(void *arg)
{
	gc_defer(say, arg);
	gc_info("not reached in the child");
}

static void child(void *fx)
{
	(void)fx;
	gc_defer(say, "parent's");
	gc_expect_child_exit(defer_in_child, "child's", GC_EXIT_FAILURE, 10000);
	gc_info("the child exited %d", GC_EXIT_FAILURE);
}

static const struct gc_subtest subtests[] = {
	{ "lifo-pass", lifo_pass, "three cleanups run last first after a passing body" },
	{ "lifo-assert", lifo_assert, "a failed assert: the cleanups deferred before it run" },
	{ "lifo-skip", lifo_skip, "a skip: the cleanups run, the subtest still skips" },
	{ "calloc-record", calloc_record, "a zeroed record, dropped last first with the others" },
	{ "dynamic", dynamic, "each dynamic's cleanups at its end, the subtest's at the end" },
	{ "cleanup-fails", cleanup_fails, "a failing cleanup fails a pass; the next still runs" },
	{ "cleanup-skips", cleanup_skips, "a cleanup cannot skip: it fails the subtest" },
	{ "overflow", overflow, "GC_DEFER_MAX + 1 fails, naming the limit; all deferred run" },
	{ "thread", thread, "gc_defer from a helper thread is refused: the process fails" },
	{ "child", child, "gc_defer in a gc_fork_run child is refused: the child exits 98" },
	{ 0 }
};

static const struct gc_fixture fixture = {
	.setup = fixture_setup,
	.teardown = fixture_teardown,
};

GC_MAIN(.name = "selftest_defer", .subtests = subtests, .fixture = &fixture)
