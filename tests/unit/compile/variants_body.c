// SPDX-License-Identifier: MIT
/*
 * lib/core.h: a body written for another case type is a compile error.
 * Built twice at configure time (tests/unit/meson.build): with -DGOOD it must
 * compile, without it must not.
 */
#include "core.h"

struct a_case { const char *name; int x; };
struct b_case { const char *name; long y; };

GC_VARIANTS(struct a_case, a_cases, body) = { { "one", 1 } };
#ifdef GOOD
static void body(void *ctx, const struct a_case *c)
#else
static void body(void *ctx, const struct b_case *c)
#endif
{
	(void)ctx;
	(void)c;
}

static void run(void *fx)
{
	gc_variants(a_cases, fx);
}

static const struct gc_subtest subtests[] = { { "run", run, "" }, { 0 } };
GC_MAIN(.name = "compile_variants_body", .subtests = subtests)
