// SPDX-License-Identifier: MIT
/*
 * GC_PRODUCT_F names the type of each table: a table of another type must
 * not compile. Built twice at configure time, like variants_body.c.
 */
#include "core.h"

struct a_case { const char *name; int x; };
struct b_case { const char *name; long y; };

#ifdef GOOD
static const struct a_case as[] = { { "a", 1 } };
#else
static const struct b_case as[] = { { "b", 2 } };
#endif
static const int ns[] = { 3 };

GC_PRODUCT_F(m, struct a_case, as, int, ns, body, "%s-%d", a->name, *b);

static void body(void *ctx, const struct a_case *a, const int *b)
{
	(void)ctx;
	(void)a;
	(void)b;
}

static void run(void *fx)
{
	gc_product(m, fx);
}

static const struct gc_subtest subtests[] = { { "run", run, "" }, { 0 } };
GC_MAIN(.name = "compile_product_table", .subtests = subtests)
