/* SPDX-License-Identifier: MIT */
/*
 * libgpuconform core: subtests, fixtures, assert / skip / fail / abort,
 * the IGT-compatible command line and output protocol, and metrics.
 *
 * A test binary is a table of subtests handed to gc_main():
 *
 *     static void test_basic(void *fx) { gc_assert_eq_int(1 + 1, 2); }
 *     static const struct gc_subtest subtests[] = {
 *         { basic, test_basic, one_plus_one },
 *         { 0 }
 *     };
 *     GC_MAIN(.name = host_example, .subtests = subtests)
 *
 * (basic, one_plus_one and host_example stand for the string literals
 * `basic`, `one plus one` and `host_example`: a subtest's name and
 * description, the binary's name.)
 *
 * Protocol (igt_core's, so igt_runner can drive our binaries):
 *   --list-subtests           one subtest name a line, exit 0
 *   --run-subtest GLOB[,GLOB] run the matching subtests (`sub@dyn` also
 *                             selects dynamic subtests)
 *   --dynamic-subtest GLOB    run only matching dynamic subtests
 *   --describe[=GLOB]         print subtest descriptions
 *   --list-soak               the subtests named in .soaks (ours, not igt's)
 *   --list-placement          every subtest and where it runs on a node of
 *                             several GPUs: `NAME gpu|gpu-alone|node|host` (ours)
 *   --help                    usage, exit 0
 *   no argument               run every subtest
 * Lines on stdout, exactly as igt_core prints them
 * [src drm/igt-gpu-tools lib/igt_core.c @ b3d809d537fe]:
 *   `Starting subtest: NAME`
 *   `Subtest NAME: SUCCESS|FAIL|SKIP|CRASH (1.234s)`
 *   `Starting dynamic subtest: NAME`
 *   `Dynamic subtest NAME: SUCCESS|FAIL|SKIP|CRASH (1.234s)`
 * and, ours, right before a SKIP result line: `Skip reason: TEXT`.
 * On stderr: where a failure or skip happened (`file:line: func(): ...`),
 * and at the end of a (dynamic) subtest its failed gc_check*s.
 * Parameter matrices: GC_VARIANTS / GC_VARIANTS_F / GC_PRODUCT_F below.
 * Exit status: GC_EXIT_* below (igt_core's IGT_EXIT_* values).
 */
#ifndef GPUCONFORM_CORE_H
#define GPUCONFORM_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* igt_core.h values; igt_runner depends on them. */
#define GC_EXIT_SUCCESS 0
#define GC_EXIT_SKIP 77
#define GC_EXIT_TIMEOUT 78
#define GC_EXIT_INVALID 79
#define GC_EXIT_FAILURE 98
#define GC_EXIT_ABORT 112

/* Environment variable naming the file metrics are appended to (JSON lines). */
#define GC_METRICS_ENV "GPUCONFORM_METRICS_FILE"

struct gc_subtest {
	const char *name;
	void (*fn)(void *fixture_data);
	const char *description;
};

/*
 * Binary-wide fixture. setup() runs once, before the first selected subtest
 * (never for --list-subtests); a gc_skip() there skips every selected subtest
 * with that reason, a failure fails them. before_each()/after_each() bracket
 * every subtest (leak snapshots and checks); after_each() may fail it.
 */
struct gc_fixture {
	void *(*setup)(void);
	void (*teardown)(void *data);
	void (*before_each)(void *data);
	void (*after_each)(void *data);
};

/*
 * Where the runner places a subtest on a node of several GPUs (--list-placement).
 * A subtest that uses one GPU is run once per GPU, pinned to it through the
 * vendors' visible-devices variables and GPUCONFORM_DEVICES (so it sees one
 * device, and the runner's placement, not a loop in the binary, covers every
 * GPU); one that uses the node's GPUs together, or a library that ignores
 * those variables (NVML, raw /dev/kfd), runs once with every GPU in view.
 */
enum gc_placement {
	GC_PLACE_NODE,      /* once, alone, every GPU in view (the default) */
	GC_PLACE_GPU,       /* once per GPU, pinned; the GPUs at the same time */
	GC_PLACE_GPU_ALONE, /* once per GPU, pinned; one GPU at a time (timing a neighbour disturbs) */
	GC_PLACE_HOST,      /* no GPU: once, alone */
};

/* A subtest placed otherwise than its binary: { cost, GC_PLACE_GPU_ALONE }, cost its name. */
struct gc_placement_rule {
	const char *subtest;
	enum gc_placement where;
};

struct gc_test {
	const char *name;
	const char *description;
	const struct gc_subtest *subtests; /* terminated by an entry with name NULL */
	const struct gc_fixture *fixture;  /* optional */
	/*
	 * The subtests whose length comes from the run's level (lib/soak.h),
	 * NULL-terminated: listed by --list-soak, so the runner can give each
	 * its share of a long run:
	 *     static const char *const soaks[] = { stress, NULL };
	 *     GC_MAIN(.name = x, .subtests = subtests, .soaks = soaks)
	 * (stress a subtest's name, x the binary's, both string literals.)
	 */
	const char *const *soaks;
	/* Where its subtests run (enum gc_placement), and the exceptions, NULL-terminated. */
	enum gc_placement placement;
	const struct gc_placement_rule *placements;
};

int gc_main(const struct gc_test *test, int argc, char **argv);

#define GC_MAIN(...)                                                      \
	int main(int argc, char **argv)                                   \
	{                                                                 \
		static const struct gc_test gc_test_def__ = { __VA_ARGS__ }; \
		return gc_main(&gc_test_def__, argc, argv);               \
	}

/* Dynamic subtests (per device, per pair...): call from a subtest body. */
void gc_dynamic(const char *name, void (*fn)(void *arg), void *arg);
void gc_dynamic_f(void (*fn)(void *arg), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Deferred cleanup: register the undo when you take a resource, and the
 * framework runs it whatever happens next.
 *
 *     static void unmap(void *p) { gc_assert_syscall(munmap(p, 4096)); }
 *
 *     static void test_map(void *fx)
 *     {
 *         char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
 *
 *         gc_assert(p != MAP_FAILED);
 *         gc_defer(unmap, p);           // runs on pass, failed assert, skip
 *         gc_assert_eq_int(p[0], 0);
 *     }
 *
 * gc_defer(fn, arg) pushes fn(arg) onto the innermost running scope:
 *   - a dynamic subtest: its cleanups run at its end, before its result line
 *     (`Dynamic subtest X: FAIL` counts a failing cleanup);
 *   - else the subtest (its body, before_each() and after_each()): they run
 *     when the body ends, before after_each() (whose leak check then sees
 *     them released), and those after_each() deferred right after it;
 *   - else the fixture's setup(): they run after teardown(), at the end of
 *     the run, or at once when setup() skips or fails (no teardown then);
 *     in teardown() they run right after it.
 * A scope's cleanups run last first on every exit from it: return, failed
 * assert, gc_fail, gc_skip, and a failure in one of its cleanups. A cleanup
 * may assert and check: a failure there fails the scope (even one that
 * passed or skipped), printed as any failure, and the remaining cleanups
 * still run. A cleanup cannot skip: gc_skip in one fails the scope.
 * Not run: after gc_abort, a crash, or a failure in a helper thread (each
 * ends the process at once).
 * arg must outlive the scope: the body's stack frame is gone when its
 * cleanups run (heap, static, the fixture's data, or a value cast to void *).
 * At most GC_DEFER_MAX cleanups are deferred at once in a process (fixture,
 * subtest and dynamic together); one more fails the scope, naming the
 * limit, and the ones already deferred run. Refused with a failure: from a
 * helper thread (defer from the thread that runs the subtest), in a
 * gc_fork_run() child (release in the child's body: the child's exit runs
 * none), and outside a subtest or fixture.
 */
#define GC_DEFER_MAX 64
#define gc_defer(fn, arg) gc__defer(__FILE__, __LINE__, __func__, (fn), (arg))
/*
 * A zeroed heap record of size bytes whose drop(record) is deferred as by
 * gc_defer (drop frees it): what a subtest holds, given back however it
 * ends. Out of memory fails the scope (`calloc(N): ...`).
 */
#define gc_defer_calloc(size, drop) gc__defer_calloc(__FILE__, __LINE__, __func__, (size), (drop))

/*
 * Matrices: one table of cases, one body, each case a dynamic subtest.
 *
 * A matrix is declared once: the case type, the table and the body. The
 * macro declares the body as
 *     static void body(void *ctx, const TYPE *c);
 * so a body written for another case type is a compile error (`conflicting
 * types`), and the table is a static const array of TYPE whose initializer
 * follows the macro:
 *
 *     struct seek_case { const char *name; off_t off; int whence; };
 *     GC_VARIANTS(struct seek_case, seek_cases, seek_one) = {
 *         { set_0, 0, SEEK_SET },
 *         { end_minus_1, -1, SEEK_END },
 *     };
 *     static void seek_one(void *ctx, const struct seek_case *c) { ... }
 *     static void test_seek(void *fx) { gc_variants(seek_cases, fx); }
 *
 * (set_0 and end_minus_1 stand for the string literals `set-0` and
 * `end-minus-1`; size_fmt and size_place_fmt below for the formats
 * `size-%zu` and `size-%zu-%s`.)
 *
 * gc_variants(table, ctx) runs body(ctx, &table[i]) for every case as the
 * dynamic subtest named by the case's `name` member (GC_VARIANTS) or by a
 * printf format over the case `c` (GC_VARIANTS_F), in table order. ctx is
 * handed through unchanged (the fixture, or a struct of what the subtest
 * adds to it). The usual rules of gc_dynamic() apply: filters, results, the
 * parent's verdict.
 *
 *     GC_VARIANTS_F(struct sz_case, sz_cases, sz_one, size_fmt, c->size) = { ... };
 *
 * Cross products: GC_PRODUCT_F runs every case a of one table with every
 * case b of another (a outer, b inner), named by a format over a and b; the
 * body takes both: static void body(void *ctx, const TYPE_A *a, const TYPE_B *b).
 * Neither table needs more than a plain static const array:
 *
 *     static const size_t sizes[] = { 0, 1, 4096 };
 *     static const struct place { const char *name; off_t off; } places[] = { ... };
 *     GC_PRODUCT_F(rw_matrix, size_t, sizes, struct place, places, rw_one,
 *                  size_place_fmt, *a, b->name);
 *     static void test_rw(void *fx) { gc_product(rw_matrix, fx); }
 *
 * A list known only at run time (the GPUs present) goes through
 * gc_each_case() with its own naming function; lib/kfd's gc_kfd_each_gpu()
 * is one.
 */
#define GC_VARIANTS(type, table, body) GC__VARIANTS(type, table, body, "%s", c->name)
#define GC_VARIANTS_F(type, table, body, ...) GC__VARIANTS(type, table, body, __VA_ARGS__)
/* ctx is `...`: a compound literal with commas needs no parentheses. */
#define gc_variants(table, ...)                                                     \
	gc_each_case(&(const struct gc_cases){ (table), sizeof(table) / sizeof((table)[0]), \
					       sizeof((table)[0]), gc__name_##table,   \
					       gc__run_##table },                       \
		     (__VA_ARGS__))

#define GC_PRODUCT_F(matrix, type_a, table_a, type_b, table_b, body, ...)              \
	static void body(void *ctx, const type_a *a, const type_b *b);                 \
	static void gc__run_##matrix(void *ctx, const void *a, const void *b)           \
	{                                                                               \
		body(ctx, a, b);                                                        \
	}                                                                               \
	static const char *gc__name_##matrix(const void *va, const void *vb, char *buf, \
					     size_t len)                                \
	{                                                                               \
		const type_a *a = va, *a_table = (table_a); /* tables of these types */ \
		const type_b *b = vb, *b_table = (table_b);                             \
		(void)a_table, (void)b_table;                                           \
		return gc__case_name(buf, len, __VA_ARGS__);                            \
	}                                                                               \
	static const struct gc_product gc__product_##matrix = {                         \
		{ (table_a), sizeof(table_a) / sizeof((table_a)[0]), sizeof((table_a)[0]), \
		  NULL, NULL },                                                         \
		{ (table_b), sizeof(table_b) / sizeof((table_b)[0]), sizeof((table_b)[0]), \
		  NULL, NULL },                                                         \
		gc__name_##matrix, gc__run_##matrix, GC_PAIRS_ALL                              \
	}
#define gc_product(matrix, ...) gc_each_pair(&gc__product_##matrix, (__VA_ARGS__))

/* The table-free engine under the macros: cases [first, first + n * size). */
struct gc_cases {
	const void *first;
	size_t n, size;
	const char *(*name)(const void *c, char *buf, size_t len);
	void (*run)(void *ctx, const void *c);
};
void gc_each_case(const struct gc_cases *cases, void *ctx);
struct gc_product {
	struct gc_cases a, b; /* first, n and size only */
	const char *(*name)(const void *a, const void *b, char *buf, size_t len);
	void (*run)(void *ctx, const void *a, const void *b);
	enum gc_pairs {
		GC_PAIRS_ALL,      /* every (i, j) */
		GC_PAIRS_DISTINCT, /* i != j: ordered pairs of two different cases */
		GC_PAIRS_UNORDERED /* i < j: each two different cases once */
	} pairs;
};
void gc_each_pair(const struct gc_product *p, void *ctx);

#define GC__VARIANTS(type, table, body, ...)                                            \
	static void body(void *ctx, const type *c);                                     \
	static void gc__run_##table(void *ctx, const void *c)                           \
	{                                                                               \
		body(ctx, c);                                                           \
	}                                                                               \
	static const char *gc__name_##table(const void *vc, char *buf, size_t len)     \
	{                                                                               \
		const type *c = vc;                                                     \
		return gc__case_name(buf, len, __VA_ARGS__);                            \
	}                                                                               \
	static const type table[]

/* Name of the running subtest / dynamic subtest (NULL outside). */
const char *gc_current_subtest(void);
/*
 * Devices are named one way: `gpu<N>`, N the device's index on the node. The
 * runner, when it pins a process to some GPUs, exports their node indexes in
 * the order the vendor's runtime shows them, in $GPUCONFORM_DEVICES (`2`, or
 * `0,3`): the visible device of ordinal i is the i-th of them. Without it
 * (a binary run by hand), N is the ordinal.
 */
#define GC_DEVICES_ENV "GPUCONFORM_DEVICES"
long gc_device_index(int ordinal); /* N of the ordinal: its $GPUCONFORM_DEVICES entry, or it */
const char *gc_device_name(int ordinal, char *buf, size_t len); /* `gpu<gc_device_index()>` */

/*
 * The one device iterator. A stack hands over its devices as a list: n
 * records of size bytes from first, in the stack's own order, and says what
 * N each is called by (index(dev, i), i its place in the list: a runtime's
 * ordinal goes through gc_device_index(); a list that ignores the runner's
 * pinning, such as /dev/kfd's or the DRM cards, gives its own place). Each
 * device runs as the dynamic subtest `<kind><N>` (`gpu` unless kind says
 * otherwise), each pair as `<kind><A>-<kind><B>`, each device and case of a
 * table as `<kind><N>-<case name>`. Where id is set, the dynamic subtest
 * begins by printing the stack's own id beside that name (`gpu1: gpu_id
 * 41234`). The usual rules of gc_dynamic() apply: a failing device ends its
 * own dynamic subtest and the next one runs.
 */
struct gc_devices {
	const void *first;
	size_t n, size;
	long (*index)(const void *dev, size_t i);
	const char *(*id)(const void *dev, char *buf, size_t len); /* NULL: none printed */
	const char *kind;                                          /* NULL: `gpu` */
};
/*
 * A runtime's devices in ordinal order (record i is ordinal i): the first n
 * of n_devices (all when n < 0 or n > n_devices), N the ordinal's
 * gc_device_index().
 */
struct gc_devices gc_runtime_devices(const void *first, int n_devices, size_t size, int n);
void gc_each_device(const struct gc_devices *devs, void (*body)(void *ctx, const void *dev),
		    void *ctx);
/* Pairs (a outer, b inner) of the list with itself, as `which` says. */
void gc_each_device_pair(const struct gc_devices *devs, enum gc_pairs which,
			 void (*body)(void *ctx, const void *a, const void *b), void *ctx);
/* Every case of a table (first, n, size, name) on a device before the next device. */
void gc_each_device_case(const struct gc_devices *devs, const struct gc_cases *cases,
			 void (*body)(void *ctx, const void *dev, const void *c), void *ctx);

/*
 * One copy's share of a count the node needs once, not once per GPU: the
 * runner runs a one-GPU subtest once per GPU (all at once, or one GPU at a
 * time for a gpu-alone one) and says how many copies there are in
 * $GPUCONFORM_COPIES (unset: 1). A race of fresh processes on a library's
 * first use, say, needs its hundred processes a night, not a hundred a GPU;
 * a timing whose copies' samples the runner joins under one metric needs its
 * repetitions once a node. Each copy makes ceil(total / copies).
 */
#define GC_COPIES_ENV "GPUCONFORM_COPIES"
unsigned long gc_node_share(unsigned long total);

/* The running subtest is named in the test's .soaks. */
bool gc_current_soaks(void);
const char *gc_current_dynamic(void);

/* Logging: info to stdout, warnings to stderr; both prefixed and flushed. */
void gc_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Leave the current subtest (or, in a fixture, every selected subtest).
 * A skip (gc_skip, gc_require*) prints its reason on stdout (`Skip reason:
 * TEXT`, the protocol line, text unchanged) and where it was called on
 * stderr, in the form of a failure's location:
 *     ../tests/kfd/mem.c:212: require_dgpu(): SKIP: TEXT
 */
#define gc_skip(...) gc__skip(__FILE__, __LINE__, __func__, __VA_ARGS__)
#define gc_fail(...) gc__fail(__FILE__, __LINE__, __func__, __VA_ARGS__)
/* Stop the whole binary at once: the system is in a state no further test should see. */
#define gc_abort(...) gc__abort(__FILE__, __LINE__, __func__, __VA_ARGS__)

#define gc_require(expr)                                                          \
	do {                                                                      \
		if (!(expr))                                                      \
			gc__skip(__FILE__, __LINE__, __func__, "requirement not met: %s", #expr); \
	} while (0)
#define gc_require_f(expr, ...)                                           \
	do {                                                              \
		if (!(expr))                                              \
			gc__skip(__FILE__, __LINE__, __func__, __VA_ARGS__); \
	} while (0)

/*
 * Asserts and checks. Each predicate is written once, as GC__<PREDICATE>(how,
 * ...), and spelled twice: gc_assert_* passes how = assert, gc_check_* how =
 * check. On failure both print where and what on stderr:
 *     ../tests/kfd/mem.c:212: test_x(): Failed assertion: got == 4
 *       got = 5
 *       4 = 4
 * an assert then leaves the subtest (its entry point gc__*_assert never
 * returns); a check says `Failed check:` where the assert says `Failed
 * assertion:`, records the failure and lets the body go on (see gc_check
 * below). A message shows the operands as the public macro was given them;
 * the eq_int / eq_uint spellings and gc_check_ok hand theirs on to another
 * public macro, which gets them macro-expanded (gc_check_ok(f(MAP)) prints
 * `f(1) == 0` where gc_assert_ok(f(MAP)) prints `f(MAP) == 0`).
 */
#define GC__EXPR(how, expr, text, ...)                                                    \
	do {                                                                              \
		if (!(expr))                                                              \
			gc__expr_##how(__FILE__, __LINE__, __func__, text, __VA_ARGS__);  \
	} while (0)
/* a op b, both converted to type; kind names the entry point that prints them. */
#define GC__CMP(how, kind, type, a, op, b, text_a, text_op, text_b)                       \
	do {                                                                              \
		type gc_a__ = (type)(a), gc_b__ = (type)(b);                              \
		if (!(gc_a__ op gc_b__))                                                  \
			gc__cmp_##kind##_##how(__FILE__, __LINE__, __func__, text_a,      \
					       text_op, text_b, gc_a__, gc_b__);          \
	} while (0)
/* Two strings equal (both NULL counts as equal). */
#define GC__EQ_STR(how, a, b, text_a, text_b)                                             \
	do {                                                                              \
		const char *gc_a__ = (a), *gc_b__ = (b);                                  \
		if (!gc__streq(gc_a__, gc_b__))                                           \
			gc__cmp_s_##how(__FILE__, __LINE__, __func__, text_a, text_b,     \
					gc_a__, gc_b__);                                  \
	} while (0)
/* A call returning -errno (lib/ convention) gives exactly -err (err > 0), or 0 for err == 0. */
#define GC__ERRNO(how, expr, err, text)                                                   \
	do {                                                                              \
		int gc_r__ = (int)(expr), gc_e__ = (err);                                 \
		if (gc_r__ != -gc_e__)                                                    \
			gc__errno_##how(__FILE__, __LINE__, __func__, text, gc_e__, gc_r__); \
	} while (0)

#define gc_assert(expr) GC__EXPR(assert, expr, #expr, NULL)
#define gc_assert_f(expr, ...) GC__EXPR(assert, expr, #expr, __VA_ARGS__)

/* Comparisons that print both operands: gc_assert_cmpint(got, ==, 4). */
#define gc_assert_cmpint(a, op, b) GC__CMP(assert, i, intmax_t, a, op, b, #a, #op, #b)
#define gc_assert_cmpuint(a, op, b) GC__CMP(assert, u, uintmax_t, a, op, b, #a, #op, #b)
#define gc_assert_cmpdouble(a, op, b) GC__CMP(assert, d, double, a, op, b, #a, #op, #b)
#define gc_assert_eq_int(a, b) gc_assert_cmpint(a, ==, b)
#define gc_assert_eq_uint(a, b) gc_assert_cmpuint(a, ==, b)
#define gc_assert_eq_str(a, b) GC__EQ_STR(assert, a, b, #a, #b)

/* A call returning -errno (lib/ convention): must be 0. Prints the errno name. */
#define gc_assert_ok(expr) GC__ERRNO(assert, expr, 0, #expr)
/* A call returning -errno must give exactly -err (err > 0) or 0 for err == 0. */
#define gc_assert_errno(expr, err) GC__ERRNO(assert, expr, err, #expr)
/* A libc-style call (-1 + errno on failure): must not return -1. */
#define gc_assert_syscall(expr)                                                      \
	do {                                                                         \
		if ((expr) == -1)                                                    \
			gc__syscall_fail(__FILE__, __LINE__, __func__, #expr);      \
	} while (0)

/*
 * Non-fatal checks: each gc_check* is its gc_assert*'s predicate with how =
 * check (same message on stderr, `Failed check:` where the assert says
 * `Failed assertion:`), so it records the failure and lets the body go on,
 * and one run lists every broken promise of a case, not only the first. When
 * the (dynamic) subtest ends, a failed check fails it (even one that then
 * skipped) and stderr gets
 *     FAIL: 2 failed checks in NAME:
 *       file.c:12: fn(): Failed check: got == 4; got = 5; 4 = 4
 *       file.c:14: fn(): Failed check: ...
 * A later fatal assert, fail or skip still leaves at once; the checks
 * recorded before it are listed all the same. In a dynamic subtest the
 * dynamic fails and the parent follows the rules of dynamic subtests. In a
 * gc_fork_run() child the child's checks are its own: listed on the child's
 * stderr when it ends, and a failed one makes it exit GC_EXIT_FAILURE (98)
 * as a failed assert there does; the parent sees only that exit status.
 * Helper threads may check too (recording is locked). Use checks for
 * independent promises; assert where going on makes no sense (an allocation
 * failed, a value the next lines depend on is wrong).
 */
#define gc_check(expr) GC__EXPR(check, expr, #expr, NULL)
#define gc_check_f(expr, ...) GC__EXPR(check, expr, #expr, __VA_ARGS__)
#define gc_check_cmpint(a, op, b) GC__CMP(check, i, intmax_t, a, op, b, #a, #op, #b)
#define gc_check_cmpuint(a, op, b) GC__CMP(check, u, uintmax_t, a, op, b, #a, #op, #b)
#define gc_check_cmpdouble(a, op, b) GC__CMP(check, d, double, a, op, b, #a, #op, #b)
#define gc_check_eq_int(a, b) gc_check_cmpint(a, ==, b)
#define gc_check_eq_uint(a, b) gc_check_cmpuint(a, ==, b)
#define gc_check_eq_str(a, b) GC__EQ_STR(check, a, b, #a, #b)
#define gc_check_ok(expr) gc_check_errno(expr, 0)
#define gc_check_errno(expr, err) GC__ERRNO(check, expr, err, #expr)
/* Checks failed so far in the running (dynamic) subtest. */
unsigned gc_checks_failed(void);

/*
 * Run fn(arg) in a forked child (crash handlers reset, no core dump) and wait
 * up to timeout_ms. Never longjmps the parent: the parent's GPU context stays
 * untouched whatever the child does.
 */
enum gc_child_fate { GC_CHILD_EXITED, GC_CHILD_SIGNALED, GC_CHILD_TIMED_OUT };
struct gc_child_status {
	enum gc_child_fate fate;
	int code; /* exit status, or signal number */
};
int gc_fork_run(void (*fn)(void *arg), void *arg, unsigned timeout_ms,
		struct gc_child_status *st);
/* Fails the current subtest unless the child died of signal sig. */
#define gc_expect_child_signal(fn, arg, sig, timeout_ms) \
	gc__expect_child_signal(__FILE__, __LINE__, __func__, fn, arg, sig, timeout_ms)
/* Fails the current subtest unless the child exited with status code. */
#define gc_expect_child_exit(fn, arg, code, timeout_ms) \
	gc__expect_child_exit(__FILE__, __LINE__, __func__, fn, arg, code, timeout_ms)
/* True in a child started by gc_fork_run(). */
bool gc_in_child(void);

/*
 * Metrics: a named sample set. Printed for humans, and appended as one JSON
 * line to the file named by $GPUCONFORM_METRICS_FILE when it is set. A name
 * outside [A-Za-z0-9._-], a non-finite sample or an unwritable file fails the
 * subtest (with the path and errno): data is never dropped silently.
 */
enum gc_better { GC_LOWER_IS_BETTER, GC_HIGHER_IS_BETTER };
void gc_metric(const char *name, const char *unit, enum gc_better better,
	       const double *samples, size_t n);
/*
 * A metric as a histogram, lossless however many samples it stands for: the
 * n distinct values, strictly ascending, values[i] seen counts[i] >= 1 times
 * (lib/metrics.c: the counts member of its JSON line). Printed as gc_metric
 * prints the expanded samples (their n, median, p99, min and max). Values
 * not finite or not strictly ascending, a count of 0 and whatever gc_metric
 * refuses fail the subtest.
 */
void gc_metric_hist(const char *name, const char *unit, enum gc_better better,
		    const double *values, const uint64_t *counts, size_t n);

/* Implementation entry points of the macros above. */
void gc__defer(const char *file, int line, const char *func, void (*fn)(void *arg), void *arg);
void *gc__defer_calloc(const char *file, int line, const char *func, size_t size,
		       void (*drop)(void *record));
void gc__skip(const char *file, int line, const char *func, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));
void gc__fail(const char *file, int line, const char *func, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));
void gc__abort(const char *file, int line, const char *func, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));
/* Each predicate's two: the assert's (never returns) and the check's (records, returns). */
void gc__expr_assert(const char *file, int line, const char *func, const char *expr,
		     const char *fmt, ...) __attribute__((noreturn, format(printf, 5, 6)));
void gc__expr_check(const char *file, int line, const char *func, const char *expr,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void gc__cmp_i_assert(const char *file, int line, const char *func, const char *a,
		      const char *op, const char *b, intmax_t va, intmax_t vb)
	__attribute__((noreturn));
void gc__cmp_i_check(const char *file, int line, const char *func, const char *a,
		     const char *op, const char *b, intmax_t va, intmax_t vb);
void gc__cmp_u_assert(const char *file, int line, const char *func, const char *a,
		      const char *op, const char *b, uintmax_t va, uintmax_t vb)
	__attribute__((noreturn));
void gc__cmp_u_check(const char *file, int line, const char *func, const char *a,
		     const char *op, const char *b, uintmax_t va, uintmax_t vb);
void gc__cmp_d_assert(const char *file, int line, const char *func, const char *a,
		      const char *op, const char *b, double va, double vb)
	__attribute__((noreturn));
void gc__cmp_d_check(const char *file, int line, const char *func, const char *a,
		     const char *op, const char *b, double va, double vb);
void gc__cmp_s_assert(const char *file, int line, const char *func, const char *a,
		      const char *b, const char *va, const char *vb) __attribute__((noreturn));
void gc__cmp_s_check(const char *file, int line, const char *func, const char *a,
		     const char *b, const char *va, const char *vb);
void gc__errno_assert(const char *file, int line, const char *func, const char *expr,
		      int want, int got) __attribute__((noreturn));
void gc__errno_check(const char *file, int line, const char *func, const char *expr,
		     int want, int got);
void gc__syscall_fail(const char *file, int line, const char *func, const char *expr)
	__attribute__((noreturn));
bool gc__streq(const char *a, const char *b);
const char *gc__case_name(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void gc__expect_child_signal(const char *file, int line, const char *func,
			     void (*fn)(void *), void *arg, int sig, unsigned timeout_ms);
void gc__expect_child_exit(const char *file, int line, const char *func,
			   void (*fn)(void *), void *arg, int code, unsigned timeout_ms);

#endif
