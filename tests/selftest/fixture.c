// SPDX-License-Identifier: MIT
/*
 * A fixture with a per-subtest leak check: `leaky` leaves a resource behind
 * and the after-each check fails it. With GPUCONFORM_SELFTEST_FIXTURE_SKIP=1
 * the setup skips, and so does every subtest, with the setup's reason.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

struct fixture {
	int open_resources;
	int at_start;
};

static void *setup(void)
{
	static struct fixture fx;
	const char *skip = getenv("GPUCONFORM_SELFTEST_FIXTURE_SKIP");

	if (skip && strcmp(skip, "1") == 0)
		gc_skip("fixture: no device (GPUCONFORM_SELFTEST_FIXTURE_SKIP=1)");
	return &fx;
}

static void before_each(void *data)
{
	struct fixture *fx = data;

	fx->at_start = fx->open_resources;
}

static void leak_check(void *data)
{
	struct fixture *fx = data;

	if (fx->open_resources != fx->at_start)
		gc_fail("leak: %d resource(s) open after the subtest, %d before",
			fx->open_resources, fx->at_start);
}

static void clean(void *data)
{
	struct fixture *fx = data;

	fx->open_resources++;
	fx->open_resources--;
}

static void leaky(void *data)
{
	struct fixture *fx = data;

	fx->open_resources++;
}

static const struct gc_fixture fixture = {
	.setup = setup,
	.before_each = before_each,
	.after_each = leak_check,
};

static const struct gc_subtest subtests[] = {
	{ "clean", clean, "opens and closes a resource" },
	{ "leaky", leaky, "opens a resource and keeps it: the leak check fails" },
	{ 0 }
};

GC_MAIN(.name = "selftest_fixture", .subtests = subtests, .fixture = &fixture)
