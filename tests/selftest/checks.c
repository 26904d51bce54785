// SPDX-License-Identifier: MIT
/*
 * Non-fatal checks, matrices and skip locations, for the framework's and the
 * runner's tests: what each subtest does is in its description.
 */
#include "core.h"

#include <stdio.h>

static void checks_fail(void *fx)
{
	int got = 5;

	(void)fx;
	gc_check_cmpint(got, ==, 4);
	gc_check(got > 0);
	gc_check_eq_str("abc", "abd");
	gc_info("still running after the failed checks");
}

static void checks_pass(void *fx)
{
	(void)fx;
	gc_check_cmpuint(4u, ==, 4);
	gc_check_f(1 + 1 == 2, "arithmetic");
	gc_check_eq_int(gc_checks_failed(), 0);
}

static void check_then_assert(void *fx)
{
	(void)fx;
	gc_check_f(1 == 2, "first broken promise (%d)", 1);
	gc_assert_eq_int(gc_checks_failed(), 1);
	gc_assert_cmpint(3, <, 2);
}

static void check_then_skip(void *fx)
{
	(void)fx;
	gc_check(0 > 1);
	gc_skip("skipping after a failed check");
}

static void skip_here(void *fx)
{
	(void)fx;
	gc_require_f(0, "selftest: skipped with its location (%d)", 7);
}

struct letter {
	const char *name;
	int value;
};

GC_VARIANTS(struct letter, letters, letter_case) = {
	{ "alpha", 1 },
	{ "beta", 2 },
	{ "gamma", 3 },
};

/* beta breaks two promises; the others keep them. */
static void letter_case(void *ctx, const struct letter *c)
{
	int *ran = ctx;

	(*ran)++;
	gc_check_cmpint(c->value, !=, 2);
	gc_check_f(c->value % 2, "%s is even", c->name);
}

static void variants(void *fx)
{
	int ran = 0;

	(void)fx;
	gc_variants(letters, &ran);
	gc_info("variants ran %d cases", ran);
}

struct size_case {
	unsigned size;
};

GC_VARIANTS_F(struct size_case, sizes, size_case_run, "size-%u", c->size) = {
	{ 0 }, { 512 }, { 4096 },
};

static void size_case_run(void *ctx, const struct size_case *c)
{
	(void)ctx;
	gc_check_cmpuint(c->size % 512, ==, 0);
}

static void variants_f(void *fx)
{
	gc_variants(sizes, fx);
}

static const unsigned counts[] = { 1, 2 };
static const struct place {
	const char *name;
	int skip;
} places[] = {
	{ "here", 0 },
	{ "there", 1 },
};

GC_PRODUCT_F(grid, unsigned, counts, struct place, places, grid_case, "n%u-%s", *a, b->name);

static void grid_case(void *ctx, const unsigned *n, const struct place *p)
{
	(void)ctx;
	if (p->skip)
		gc_skip("%s is not reachable", p->name);
	gc_check_cmpuint(*n, <, 2);
}

static void product(void *fx)
{
	gc_product(grid, fx);
}

static const char *const trio[] = { "a", "b", "c" }, *const xyz[] = { "x", "y", "z" };

static const char *trio_name(const void *x, const void *y, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", *(const char *const *)x, *(const char *const *)y);
	return buf;
}

static void trio_case(void *ctx, const void *x, const void *y)
{
	(void)ctx, (void)x, (void)y;
}

/* gc_each_pair() over one table with itself: the pairs each rule names. */
static void pairs(void *fx)
{
	const struct gc_cases t = { trio, ARRAY_SIZE(trio), sizeof(trio[0]), NULL, NULL };
	const struct gc_cases u = { xyz, ARRAY_SIZE(xyz), sizeof(xyz[0]), NULL, NULL };

	(void)fx;
	gc_each_pair(&(const struct gc_product){ t, t, trio_name, trio_case, GC_PAIRS_DISTINCT },
		     NULL);
	gc_each_pair(&(const struct gc_product){ u, u, trio_name, trio_case, GC_PAIRS_UNORDERED },
		     NULL);
}

static void child_checks(void *arg)
{
	(void)arg;
	gc_check_f(0, "a broken promise in the child");
	printf("child went on\n");
}

static void forked_check(void *fx)
{
	(void)fx;
	gc_expect_child_exit(child_checks, NULL, GC_EXIT_FAILURE, 10000);
	gc_assert_eq_int(gc_checks_failed(), 0); /* the child's checks stay the child's */
}

static const struct gc_subtest subtests[] = {
	{ "checks-fail", checks_fail, "two failed checks, one kept; the body goes on: FAIL listing 2" },
	{ "checks-pass", checks_pass, "checks that hold: SUCCESS" },
	{ "check-then-assert", check_then_assert, "a failed check then a fatal assert: both told" },
	{ "check-then-skip", check_then_skip, "a failed check then a skip: FAIL" },
	{ "skip-here", skip_here, "a skip: its file:line on stderr" },
	{ "variants", variants, "alpha, beta, gamma: beta fails two checks" },
	{ "variants-f", variants_f, "size-0, size-512, size-4096 named by a format: all pass" },
	{ "product", product, "n1-here n1-there n2-here n2-there: n2-here fails, *-there skip" },
	{ "pairs", pairs, "ab ac ba bc ca cb (distinct), then xy xz yz (unordered): all pass" },
	{ "forked-check", forked_check, "a failed check in a forked child: it exits 98" },
	{ 0 }
};

GC_MAIN(.name = "selftest_checks", .subtests = subtests)
