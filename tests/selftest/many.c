// SPDX-License-Identifier: MIT
/*
 * 1000 trivial subtests, t000..t999: the subject of bench/runner_overhead.py
 * (runner cost per subtest). Built, but in neither manifest.
 */
#include "core.h"

static void trivial(void *fx)
{
	(void)fx;
	gc_assert_eq_int(1, 1);
}

#define T(a, b, c) { "t" #a #b #c, trivial, "does nothing, successfully" },
#define T10(a, b) T(a, b, 0) T(a, b, 1) T(a, b, 2) T(a, b, 3) T(a, b, 4) \
	T(a, b, 5) T(a, b, 6) T(a, b, 7) T(a, b, 8) T(a, b, 9)
#define T100(a) T10(a, 0) T10(a, 1) T10(a, 2) T10(a, 3) T10(a, 4) \
	T10(a, 5) T10(a, 6) T10(a, 7) T10(a, 8) T10(a, 9)

static const struct gc_subtest subtests[] = {
	T100(0) T100(1) T100(2) T100(3) T100(4) T100(5) T100(6) T100(7) T100(8) T100(9)
	{ 0 }
};

GC_MAIN(.name = "selftest_many", .subtests = subtests)
