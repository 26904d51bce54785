// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/srcver: kernel releases as uname gives them, and the
 * SVM granularity promise of each; amdsmi's init count by library version.
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

struct amdsmi_case {
	const char *name;
	unsigned major, minor, release;
	enum gc_amdsmi_count count;
};

/* 24.7.0 read through the 26.x layout is major 24 (its year), minor 7, release 0. */
GC_VARIANTS_F(struct amdsmi_case, amdsmi_cases, amdsmi_one, "%s", c->name) = {
	{ "v23-4-0-year", 23, 4, 0, GC_AMDSMI_COUNT_NONE },
	{ "v24-7-0-year", 24, 7, 0, GC_AMDSMI_COUNT_NONE },
	{ "v25-0-0", 25, 0, 0, GC_AMDSMI_COUNT_UNKNOWN },
	{ "v26-0-0", 26, 0, 0, GC_AMDSMI_COUNT_UNKNOWN },
	{ "v26-1-9", 26, 1, 9, GC_AMDSMI_COUNT_UNKNOWN },
	{ "v26-2-0", 26, 2, 0, GC_AMDSMI_COUNT_UNKNOWN },
	{ "v26-2-1", 26, 2, 1, GC_AMDSMI_COUNT_UNLOCKED },
	{ "v26-10-0", 26, 10, 0, GC_AMDSMI_COUNT_UNLOCKED },
	{ "v27-1-0", 27, 1, 0, GC_AMDSMI_COUNT_UNLOCKED },
	{ "v26-huge-minor", 26, 5000, 0, GC_AMDSMI_COUNT_UNKNOWN },
};

static void amdsmi_one(void *ctx, const struct amdsmi_case *c)
{
	struct gc_amdsmi_count_rule r = gc_amdsmi_count_rule(c->major, c->minor, c->release);

	(void)ctx;
	gc_check_cmpint(r.count, ==, c->count);
	gc_check(r.why && r.why[0]);
}

static void test_amdsmi(void *data)
{
	gc_variants(amdsmi_cases, data);
}

static const struct gc_subtest subtests[] = {
	{ "release", test_release, "MAJOR.MINOR from uname releases, junk refused" },
	{ "granularity", test_granularity, "the SVM granularity clamp from 6.7, either before" },
	{ "amdsmi-count", test_amdsmi, "amdsmi's init count by version: bool, unknown, count" },
	{ 0 }
};

GC_MAIN(.name = "unit_srcver", .subtests = subtests)
