// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/srcver: kernel releases as uname gives them, and the
 * SVM granularity promise of each.
 */
#include <errno.h>

#include "core.h"
#include "srcver.h"

struct rel_case {
	const char *name;
	const char *release;
	int ret;
	unsigned major, minor;
};

GC_VARIANTS_F(struct rel_case, rel_cases, rel_one, "%s", c->name) = {
	{ "mainline", "6.7.0", 0, 6, 7 },
	{ "debian", "6.1.0-18-amd64", 0, 6, 1 },
	{ "rhel", "5.14.0-362.el9.x86_64", 0, 5, 14 },
	{ "two-digit-minor", "6.10.3-arch1-1", 0, 6, 10 },
	{ "no-minor", "6", -EINVAL, 0, 0 },
	{ "empty-minor", "6.", -EINVAL, 0, 0 },
	{ "prefixed", "v6.7", -EINVAL, 0, 0 },
	{ "empty", "", -EINVAL, 0, 0 },
};

static void rel_one(void *ctx, const struct rel_case *c)
{
	unsigned ma = 0, mi = 0;

	(void)ctx;
	gc_check_cmpint(gc_kernel_release_parse(c->release, &ma, &mi), ==, c->ret);
	if (c->ret == 0) {
		gc_check_cmpuint(ma, ==, c->major);
		gc_check_cmpuint(mi, ==, c->minor);
	}
}

static void test_release(void *data)
{
	gc_variants(rel_cases, data);
}

/* 6.7 (the clamp's mainline release) is the boundary, 6.10 sorts after 6.7, not before. */
static void test_granularity(void *data)
{
	struct gc_svm_gran_rule r;

	(void)data;
	r = gc_svm_granularity_rule(6, 7, 200);
	gc_check(!r.either);
	gc_check_cmpuint(r.clamped, ==, 0x3F);
	r = gc_svm_granularity_rule(6, 10, 200);
	gc_check(!r.either);
	r = gc_svm_granularity_rule(7, 0, 200);
	gc_check(!r.either);
	r = gc_svm_granularity_rule(6, 6, 200);
	gc_check(r.either);
	gc_check_cmpuint(r.as_given, ==, 200);
	gc_check_cmpuint(r.clamped, ==, 0x3F);
	r = gc_svm_granularity_rule(5, 14, 200);
	gc_check(r.either);
	r = gc_svm_granularity_rule(6, 8, 9);
	gc_check_cmpuint(r.clamped, ==, 9);
}

static const struct gc_subtest subtests[] = {
	{ "release", test_release, "MAJOR.MINOR from uname releases, junk refused" },
	{ "granularity", test_granularity, "the SVM granularity clamp from 6.7, either before" },
	{ 0 }
};

GC_MAIN(.name = "unit_srcver", .subtests = subtests)
