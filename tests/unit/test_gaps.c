// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/gaps: the shapes table, gap statistics and the bubble
 * rule (percentiles as NumPy's default `linear` method), the metric
 * histogram of every gap, the walk over one run's stamps, the gaps matrix,
 * the bracketing of profiler records against stamps.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "gaps.h"
#include "measure.h"
#include "prof_sessions.h"
#include "soak.h"

#define assert_near(a, b) gc_assert_f(fabs((a) - (b)) < 1e-9, "%s = %.12g, want %.12g", #a, \
				      (double)(a), (double)(b))

/*
 * The shapes gaps.h lists (chain2 to chain8192, wide16, wide256, mixed), with the
 * dispatches each makes (wide: root + branches + join).
 */
static void test_shapes(void *fx)
{
	(void)fx;
	gc_assert_cmpuint(gc_shape_find("chain8192")->kernels, ==, 8192);
	gc_assert_cmpuint(gc_shape_find("wide16")->kernels, ==, 18);
	gc_assert_cmpuint(gc_shape_find("wide256")->kind, ==, GC_SHAPE_WIDE);
	gc_assert_cmpuint(gc_shape_find("mixed")->kind, ==, GC_SHAPE_MIXED);
	gc_assert(gc_shape_find("chain3") == NULL);
	gc_assert(gc_shape_find("") == NULL);
}

static void fill(struct gc_gaps *g, const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gc_assert_ok(gc_gaps_add(g, v[i]));
}

/* 99 gaps of 1 us and one of 5 us: p50 1000, p99 1040 (linear), max 5000, one bubble. */
static void test_stats(void *fx)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	(void)fx;
	for (int i = 0; i < 99; i++)
		gc_assert_ok(gc_gaps_add(&g, 1000));
	gc_assert_ok(gc_gaps_add(&g, 5000));
	gc_assert_ok(gc_gaps_add_span(&g, 10));
	gc_assert_ok(gc_gaps_add_span(&g, 20));
	gc_assert_ok(gc_gap_stats(&g, &st));
	assert_near(st.p50, 1000);
	assert_near(st.p99, 1040);
	assert_near(st.max, 5000);
	assert_near(st.span_us, 15);
	assert_near(st.span_max_us, 20);
	gc_assert_cmpuint(st.bubbles, ==, 1);
	gc_assert_cmpuint(st.n, ==, 100);
	gc_gaps_free(&g);
	gc_assert(g.v == NULL && g.n == 0 && g.runs == 0);
}

/* A gap of exactly 4 x p50 is not a bubble; one above it is. */
static void test_bubble_edge(void *fx)
{
	const double v[] = { 100, 100, 100, 400, 401 };
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	(void)fx;
	fill(&g, v, 5);
	gc_assert_ok(gc_gap_stats(&g, &st));
	assert_near(st.p50, 100);
	gc_assert_cmpuint(st.bubbles, ==, 1);
	assert_near(st.span_us, 0); /* no runs */
	gc_gaps_free(&g);
}

static void test_empty(void *fx)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	(void)fx;
	gc_assert_errno(gc_gap_stats(&g, &st), EINVAL);
}

/* ------------------------------------------------------------ the gap.MODE.SHAPE histogram */

/* Eight gaps in no order: 992, 1024, 1056 twice each, 1088 and 5000.5 once. */
static const double hist_gaps[] = { 1056, 992, 1024, 992, 1088, 1024, 5000.5, 1056 };
static const double hist_values[] = { 992, 1024, 1056, 1088, 5000.5 };
static const uint64_t hist_counts[] = { 2, 2, 2, 1, 1 };

/* The distinct values ascending, their counts summing to n; v left as it was. */
static void test_histogram(void *fx)
{
	double keep[ARRAY_SIZE(hist_gaps)], values[ARRAY_SIZE(hist_gaps)], one = 7;
	double same[] = { 32, 32, 32, 32 };
	uint64_t counts[ARRAY_SIZE(hist_gaps)], sum = 0;
	size_t k;

	(void)fx;
	gc_assert_cmpuint(gc_gap_histogram(hist_gaps, 0, values, counts), ==, 0);
	gc_assert_cmpuint(gc_gap_histogram(&one, 1, values, counts), ==, 1);
	gc_assert_cmpdouble(values[0], ==, 7);
	gc_assert_cmpuint(counts[0], ==, 1);
	gc_assert_cmpuint(gc_gap_histogram(same, ARRAY_SIZE(same), values, counts), ==, 1);
	gc_assert_cmpdouble(values[0], ==, 32);
	gc_assert_cmpuint(counts[0], ==, 4);
	memcpy(keep, hist_gaps, sizeof(keep));
	k = gc_gap_histogram(hist_gaps, ARRAY_SIZE(hist_gaps), values, counts);
	gc_assert_cmpuint(k, ==, ARRAY_SIZE(hist_values));
	for (size_t i = 0; i < k; i++) {
		gc_assert_cmpdouble(values[i], ==, hist_values[i]);
		gc_assert_cmpuint(counts[i], ==, hist_counts[i]);
		sum += counts[i];
	}
	gc_assert_cmpuint(sum, ==, ARRAY_SIZE(hist_gaps));
	gc_assert(memcmp(keep, hist_gaps, sizeof(keep)) == 0);
}

/* 100000 gaps on a 32 ns clock, in a scrambled order: every one counted once. */
static void test_histogram_many(void *fx)
{
	enum { N = 100000 };
	double *v = malloc(N * sizeof(*v)), *values = malloc(N * sizeof(*values));
	uint64_t *counts = malloc(N * sizeof(*counts)), sum = 0, x = 1;
	size_t k;

	(void)fx;
	gc_assert(v && values && counts);
	for (size_t i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = 768 + 32.0 * (double)((x >> 33) % 300);
	}
	k = gc_gap_histogram(v, N, values, counts);
	gc_assert_cmpuint(k, <=, 300);
	for (size_t i = 0; i < k; i++) {
		gc_assert_cmpuint(counts[i], >, 0);
		gc_assert(i == 0 || values[i] > values[i - 1]);
		sum += counts[i];
	}
	gc_assert_cmpuint(sum, ==, N);
	gc_assert_cmpdouble(values[0], ==, gc_stat_min(v, N));
	gc_assert_cmpdouble(values[k - 1], ==, gc_stat_max(v, N));
	free(v);
	free(values);
	free(counts);
}

/*
 * A metrics file of the subtest's own, named by GC_METRICS_ENV, and a memfd
 * that the children's stdout and stderr go to; both given back however the
 * subtest ends.
 */
struct hist_fx {
	char path[4096];
	int out;
	const double *values;
	const uint64_t *counts;
	size_t n;
};

static void hist_fx_drop(void *p)
{
	struct hist_fx *h = p;

	unlink(h->path);
	unsetenv(GC_METRICS_ENV);
	close(h->out);
	free(h);
}

static struct hist_fx *hist_fx_new(void)
{
	struct hist_fx *h = gc_defer_calloc(sizeof(*h), hist_fx_drop);
	const char *tmp = getenv("TMPDIR");
	int fd;

	h->out = -1;
	snprintf(h->path, sizeof(h->path), "%s/unit_gaps.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	gc_assert_syscall(fd = mkstemp(h->path));
	close(fd);
	gc_assert_syscall(h->out = memfd_create("hist-out", 0));
	gc_assert_syscall(setenv(GC_METRICS_ENV, h->path, 1));
	return h;
}

/* The whole of fd (a file or the memfd) into buf, NUL-terminated. */
static void read_all(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	gc_assert_syscall(n);
	buf[n] = '\0';
}

static void read_path(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	gc_assert_syscall(fd);
	read_all(fd, buf, len);
	close(fd);
}

static void hist_child(void *arg)
{
	const struct hist_fx *h = arg;

	dup2(h->out, STDOUT_FILENO);
	dup2(h->out, STDERR_FILENO);
	gc_metric_hist("gap.unit.hist", "ns", GC_LOWER_IS_BETTER, h->values, h->counts, h->n);
}

/* gc_metric_hist(values, counts, n) in a child that must exit with code; its output into out. */
static void run_hist(struct hist_fx *h, const double *values, const uint64_t *counts, size_t n,
		     int code, char *out, size_t len)
{
	struct gc_child_status st;

	h->values = values, h->counts = counts, h->n = n;
	gc_assert_syscall(ftruncate(h->out, 0));
	gc_assert_syscall(lseek(h->out, 0, SEEK_SET)); /* the children share its offset */
	gc_assert_ok(gc_fork_run(hist_child, h, 10000, &st));
	read_all(h->out, out, len);
	gc_assert_f(st.fate == GC_CHILD_EXITED && st.code == code,
		    "gc_metric_hist: fate %d, status %d, want exit %d; its output:\n%s", st.fate,
		    st.code, code, out);
}

/* A bad histogram fails the subtest, saying why, and appends nothing. */
static void hist_refused(struct hist_fx *h)
{
	static const double descending[] = { 1024, 992 }, nan_v[] = { 992, NAN };
	static const double twice[] = { 992, 992 };
	static const uint64_t ones[] = { 1, 1 }, zero[] = { 3, 0 };
	char out[4096], json[64];

	run_hist(h, descending, ones, 2, GC_EXIT_FAILURE, out, sizeof(out));
	gc_assert_f(strstr(out, "must be strictly ascending"), "%s", out);
	run_hist(h, twice, ones, 2, GC_EXIT_FAILURE, out, sizeof(out));
	gc_assert_f(strstr(out, "must be strictly ascending"), "%s", out);
	run_hist(h, hist_values, zero, 2, GC_EXIT_FAILURE, out, sizeof(out));
	gc_assert_f(strstr(out, "has a count of 0"), "%s", out);
	run_hist(h, nan_v, ones, 2, GC_EXIT_FAILURE, out, sizeof(out));
	gc_assert_f(strstr(out, "value 1 is not finite"), "%s", out);
	run_hist(h, hist_values, hist_counts, 0, GC_EXIT_FAILURE, out, sizeof(out));
	gc_assert_f(strstr(out, "has no samples"), "%s", out);
	read_path(h->path, json, sizeof(json));
	gc_assert_eq_str(json, "");
}

/*
 * gc_metric_hist's JSON line: the distinct values ascending, then their
 * counts; the human line's median and p99 are the expanded gaps' own.
 */
static void test_metric_hist(void *fx)
{
	struct hist_fx *h = hist_fx_new();
	char out[4096], json[4096], want[128];

	(void)fx;
	hist_refused(h);
	run_hist(h, hist_values, hist_counts, ARRAY_SIZE(hist_values), GC_EXIT_SUCCESS, out,
		 sizeof(out));
	read_path(h->path, json, sizeof(json));
	gc_info("the line: %.*s", (int)strcspn(json, "\n"), json);
	gc_assert_eq_str(json,
		"{\"test\":\"unit_gaps\",\"subtest\":\"metric-hist\",\"dynamic\":null,"
		"\"name\":\"gap.unit.hist\",\"unit\":\"ns\",\"better\":\"lower\","
		"\"samples\":[992,1024,1056,1088,5000.5],\"counts\":[2,2,2,1,1]}\n");
	snprintf(want, sizeof(want), "Metric gap.unit.hist: n=%zu median=%.6g p99=%.6g min=992 ",
		 ARRAY_SIZE(hist_gaps), gc_stat_median(hist_gaps, ARRAY_SIZE(hist_gaps)),
		 gc_stat_percentile(hist_gaps, ARRAY_SIZE(hist_gaps), 99));
	gc_assert_f(strstr(out, want), "\"%s\" not in:\n%s", want, out);
	gc_assert_f(strstr(out, "median=1040 "), "%s", out); /* between 1024 and 1056 */
}

/* The sum of the counts member of a JSON line; the count of its numbers into *n. */
static uint64_t counts_sum(const char *line, size_t *n)
{
	const char *p = strstr(line, "\"counts\":[");
	uint64_t sum = 0;
	char *end;

	gc_assert_f(p, "no counts in %.200s", line);
	p += strlen("\"counts\":[");
	for (*n = 0; *p != ']'; p = end + (*end == ',')) {
		sum += strtoull(p, &end, 10);
		gc_assert_f(end != p, "not a count at %.40s", p);
		(*n)++;
	}
	return sum;
}

/* The count of numbers in the samples member of a JSON line. */
static size_t samples_len(const char *line)
{
	const char *p = strstr(line, "\"samples\":[");
	size_t n = 1;

	gc_assert_f(p, "no samples in %.200s", line);
	for (p += strlen("\"samples\":["); *p != ']'; p++)
		n += *p == ',';
	return n;
}

/*
 * gc_gaps_report writes every gap: all 20001 of them in gap.MODE.SHAPE's
 * histogram, then its other metrics, their names unchanged.
 */
static void test_report_every_gap(void *fx)
{
	static const char *const names[] = { "gap.graph.unit", "gap-p50.graph.unit",
		"gap-p99.graph.unit", "gap-max.graph.unit", "bubbles.graph.unit",
		"graph-time.graph.unit" };
	struct hist_fx *h = hist_fx_new();
	struct gc_gaps g = { 0 };
	static char json[1 << 16];
	char *line = json, *nl;
	size_t n;

	(void)fx;
	for (unsigned i = 0; i < 20001; i++)
		gc_assert_ok(gc_gaps_add(&g, 768 + 32.0 * ((i * 7919u) % 97)));
	gc_assert_ok(gc_gaps_add_span(&g, 12.5));
	gc_gaps_report(&g, "graph", "unit");
	gc_gaps_free(&g);
	read_path(h->path, json, sizeof(json));
	for (size_t i = 0; i < ARRAY_SIZE(names); i++, line = nl + 1) {
		char want[96];

		nl = strchr(line, '\n');
		gc_assert_f(nl, "line %zu missing in:\n%s", i, json);
		*nl = '\0';
		snprintf(want, sizeof(want), "\"name\":\"%s\",", names[i]);
		gc_assert_f(strstr(line, want), "line %zu is not %s: %.200s", i, names[i], line);
		gc_assert_f(i == 0 || !strstr(line, "\"counts\""), "%s has counts", names[i]);
	}
	gc_assert_eq_str(line, "");
	gc_assert_cmpuint(counts_sum(json, &n), ==, 20001);
	gc_assert_cmpuint(n, ==, 97);
	gc_assert_cmpuint(samples_len(json), ==, 97);
}

/* ------------------------------------------------------------ one run's stamps */

#define MAX_KERNELS 8200u

struct stamps {
	uint64_t st[2 * MAX_KERNELS];
	uint32_t counts[MAX_KERNELS];
	struct gc_gap_run run;
};

static struct stamps *stamps_new(uint64_t hz)
{
	struct stamps *s = calloc(1, sizeof(*s));

	gc_assert(s);
	s->run = (struct gc_gap_run){ s->st, s->counts, hz };
	for (unsigned i = 0; i < MAX_KERNELS; i++)
		s->counts[i] = 1;
	return s;
}

static void stamp(struct stamps *s, unsigned idx, uint64_t start, uint64_t end)
{
	s->st[2 * idx] = start;
	s->st[2 * idx + 1] = end;
}

/* Dispatches of 1000 ticks, one every period, from 1000. */
static void stamp_chain(struct stamps *s, unsigned n, uint64_t period)
{
	for (unsigned i = 0; i < n; i++)
		stamp(s, i, 1000 + period * i, 2000 + period * i);
}

/* ns stamps are taken as they are; s_memrealtime's 100 MHz ticks are 10 ns. */
static void test_gap_ns(void *fx)
{
	struct gc_gap_run ns = { .hz = GC_GAP_NS_HZ }, amd = { .hz = 100000000 };

	(void)fx;
	assert_near(gc_gap_ns(&ns, 12345), 12345);
	assert_near(gc_gap_ns(&ns, 9007199254740993ull), (double)9007199254740993ull);
	assert_near(gc_gap_ns(&amd, 7), 70);
}

/*
 * A run of sh, chain or mixed (whose memset / memcpy nodes stamp nothing),
 * its dispatches 1000 ticks long, one every period: kernels - 1 gaps of
 * period - 1000 ticks, and the span from the first start to the last end.
 */
static void check_chain_run(const char *shape, uint64_t hz, uint64_t period)
{
	const struct gc_shape *sh = gc_shape_get(shape);
	struct stamps *s = stamps_new(hz);
	double tick = gc_gap_ns(&s->run, 1);
	struct gc_gaps g = { 0 };

	stamp_chain(s, sh->kernels, period);
	gc_gap_add_run(&s->run, sh, &g);
	gc_assert_cmpuint(g.n, ==, sh->kernels - 1);
	for (size_t i = 0; i < g.n; i++)
		assert_near(g.v[i], (double)(period - 1000) * tick);
	gc_assert_cmpuint(g.runs, ==, 1);
	assert_near(g.span_us[0], (double)(period * (sh->kernels - 1) + 1000) * tick / 1e3);
	gc_assert_cmpuint(g.long_gaps, ==, 0);
	gc_gaps_free(&g);
	free(s);
}

static void test_run_chain(void *fx)
{
	(void)fx;
	check_chain_run("chain16", GC_GAP_NS_HZ, 3000);
	check_chain_run("chain8192", GC_GAP_NS_HZ, 1000); /* back to back: gaps of 0 */
}

/*
 * wide16: the root at [0, 1000], branch i from 1000 + 10 i for 1000 ns but
 * branch 7, which ends last (5000), the join from 5500: 16 gaps of 10 i from
 * the root, then 500 from branch 7 to the join; the span 0 .. the join's end.
 */
static void test_run_wide(void *fx)
{
	struct stamps *s = stamps_new(GC_GAP_NS_HZ);
	struct gc_gaps g = { 0 };

	(void)fx;
	stamp(s, 0, 0, 1000);
	for (unsigned i = 1; i <= 16; i++)
		stamp(s, i, 1000 + 10 * i, i == 7 ? 5000 : 2000 + 10 * i);
	stamp(s, 17, 5500, 6500);
	gc_gap_add_run(&s->run, gc_shape_get("wide16"), &g);
	gc_assert_cmpuint(g.n, ==, 17);
	for (unsigned i = 1; i <= 16; i++)
		assert_near(g.v[i - 1], 10 * i);
	assert_near(g.v[16], 500);
	assert_near(g.span_us[0], 6.5);
	gc_gaps_free(&g);
	free(s);
}

static void test_run_mixed(void *fx)
{
	(void)fx;
	check_chain_run("mixed", 100000000, 1500); /* s_memrealtime at 100 MHz: 10 ns a tick */
}

/* Gaps over GC_GAP_LONG_NS are counted per gap set (the first 5 logged). */
static void test_run_long_gaps(void *fx)
{
	struct stamps *s = stamps_new(GC_GAP_NS_HZ);
	struct gc_gaps g = { 0 };

	(void)fx;
	stamp_chain(s, 16, 1000 + 200000);
	gc_gap_add_run(&s->run, gc_shape_get("chain16"), &g);
	gc_gap_add_run(&s->run, gc_shape_get("chain16"), &g);
	gc_assert_cmpuint(g.long_gaps, ==, 30);
	gc_gaps_free(&g);
	gc_assert_cmpuint(g.long_gaps, ==, 0);
	free(s);
}

/* Two dispatches' stamps walked as a run of chain2, or as one launch of 2. */
struct walk_case {
	const char *name;
	uint64_t st[4]; /* dispatch 0 start, end; dispatch 1 start, end (ns) */
	bool launch;
	int exit;       /* of the walk: GC_EXIT_FAILURE where the clock went backwards */
};

GC_VARIANTS(struct walk_case, walk_cases, walk_one) = {
	{ "gap-0", { 1000, 2000, 2000, 3000 }, false, GC_EXIT_SUCCESS },
	{ "started-early", { 1000, 2000, 1999, 3000 }, false, GC_EXIT_FAILURE },
	{ "ended-before-start", { 2001, 2000, 2500, 3000 }, false, GC_EXIT_FAILURE },
	{ "launch-span-0", { 5000, 5000, 5000, 5000 }, true, GC_EXIT_SUCCESS },
	{ "launch-span-negative", { 5000, 6000, 100, 200 }, true, GC_EXIT_FAILURE },
};

static void walk_child(void *arg)
{
	const struct walk_case *c = arg;
	struct stamps *s = stamps_new(GC_GAP_NS_HZ);
	struct gc_gaps g = { 0 };

	memcpy(s->st, c->st, sizeof(c->st));
	if (c->launch)
		gc_gap_add_launches(&s->run, 1, 2, &g);
	else
		gc_gap_add_run(&s->run, gc_shape_get("chain2"), &g);
	gc_gaps_free(&g);
	free(s);
}

static void walk_one(void *ctx, const struct walk_case *c)
{
	struct walk_case k = *c;

	(void)ctx;
	gc_expect_child_exit(walk_child, &k, c->exit, 10000);
}

/*
 * A gap of 0 is fine; a dispatch that started before the one it depends on
 * ended, one that ended before it started, or launches spanning less than 0
 * fail.
 */
static void test_backwards(void *fx)
{
	gc_variants(walk_cases, fx);
}

/* 3 launches of 2 (the second 300 ns late): the gaps 1 -> 2 and 3 -> 4, the span of all six. */
static void test_launches(void *fx)
{
	struct stamps *s = stamps_new(GC_GAP_NS_HZ);
	struct gc_gaps g = { 0 };

	(void)fx;
	stamp_chain(s, 6, 1500);
	stamp(s, 2, 1000 + 1500 * 2 + 300, 2000 + 1500 * 2 + 300);
	gc_gap_add_launches(&s->run, 3, 2, &g);
	gc_assert_cmpuint(g.n, ==, 2);
	assert_near(g.v[0], 800);
	assert_near(g.v[1], 500);
	gc_assert_cmpuint(g.runs, ==, 1);
	assert_near(g.span_us[0], (2000 + 1500 * 5 - 1000) / 1e3);
	gc_gaps_free(&g);
	free(s);
}

static void expect_chain16(void *arg)
{
	gc_gap_expect_counts(arg, 16, "chain16");
}

static void expect_graph_launch(void *arg)
{
	setenv("GPUCONFORM_BUBBLES_REMOVE", "stamp", 1); /* in the child only */
	gc_gap_expect_launch(arg, gc_shape_get("chain16"), true);
}

static void expect_stream_launch(void *arg)
{
	setenv("GPUCONFORM_BUBBLES_REMOVE", "stamp", 1);
	gc_gap_expect_launch(arg, gc_shape_get("chain16"), false);
}

/*
 * Each dispatch exactly once: a lost (0) or replayed (2) one fails, and
 * GPUCONFORM_BUBBLES_REMOVE=stamp makes a graph launch (not a stream's) fail.
 */
static void test_counts(void *fx)
{
	struct stamps *s = stamps_new(GC_GAP_NS_HZ);

	(void)fx;
	gc_expect_child_exit(expect_chain16, &s->run, GC_EXIT_SUCCESS, 10000);
	gc_expect_child_exit(expect_stream_launch, &s->run, GC_EXIT_SUCCESS, 10000);
	gc_expect_child_exit(expect_graph_launch, &s->run, GC_EXIT_FAILURE, 10000);
	s->counts[15] = 2;
	gc_expect_child_exit(expect_chain16, &s->run, GC_EXIT_FAILURE, 10000);
	s->counts[15] = 1, s->counts[3] = 0;
	gc_expect_child_exit(expect_chain16, &s->run, GC_EXIT_FAILURE, 10000);
	s->counts[3] = 1, s->counts[16] = 0; /* past the 16 checked */
	gc_expect_child_exit(expect_chain16, &s->run, GC_EXIT_SUCCESS, 10000);
	free(s);
}

/* ------------------------------------------------------------ the gaps matrix */

static const char *const matrix_names[] = {
	"stream-chain2", "stream-chain16", "stream-chain256", "stream-chain8192", "stream-mixed",
	"graph-chain2",  "graph-chain16",  "graph-chain256",  "graph-chain8192",  "graph-wide16",
	"graph-wide256", "graph-mixed",
};

/* The case names of today's cuda_bubbles and hip_bubbles, in their order. */
static void test_cases(void *fx)
{
	struct gc_gap_case v[GC_GAP_MAX_CASES];
	size_t n = gc_gap_cases(v, GC_GAP_MAX_CASES);
	char name[64];

	(void)fx;
	gc_assert_cmpuint(n, ==, ARRAY_SIZE(matrix_names));
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%s", v[i].mode, v[i].sh->name);
		gc_assert_eq_str(name, matrix_names[i]);
		gc_assert(v[i].stream == (strcmp(v[i].mode, "stream") == 0));
	}
	gc_assert_cmpuint(gc_gap_cases(v, 3), ==, n); /* counts past max, writes max */
}

/* A vendor that stamps on its own: what the matrix asked of it, in order. */
struct fake {
	struct stamps *s;
	struct gc_gap_dev dev;
	unsigned builds, destroys, graph_runs, stream_runs;
	char seen[GC_GAP_MAX_CASES][32];
	size_t nseen;
	/* profiler-sessions: a profiler attached adds extra ns to every gap; what it saw */
	bool tracing, leave_on;
	unsigned extra;
	uint64_t traced;
	unsigned sessions, modes[8];
	bool finalized;
};

struct fake_graph {
	const struct gc_shape *sh;
};

static void fake_stamp(struct fake *f, const struct gc_shape *sh)
{
	uint64_t extra = f->tracing ? f->extra : 0;

	f->traced += f->tracing ? sh->kernels : 0;
	if (sh->kind != GC_SHAPE_WIDE) {
		stamp_chain(f->s, sh->kernels, 2000 + extra);
		return;
	}
	stamp(f->s, 0, 0, 1000);
	for (unsigned i = 1; i <= sh->n; i++)
		stamp(f->s, i, 1500 + extra, 2500 + extra);
	stamp(f->s, sh->n + 1, 3000, 4000);
}

static void fake_seen(struct fake *f)
{
	const char *name = gc_current_dynamic();

	if (!name || (f->nseen && strcmp(f->seen[f->nseen - 1], name) == 0))
		return; /* outside the matrix, or the same case's next run */
	gc_assert(f->nseen < GC_GAP_MAX_CASES);
	snprintf(f->seen[f->nseen++], sizeof(f->seen[0]), "%s", name);
}

static void fake_build(struct fake *f, const struct gc_shape *sh, struct fake_graph *gr)
{
	f->builds++;
	gr->sh = sh;
}

static void fake_destroy(struct fake *f, struct fake_graph *gr)
{
	f->destroys++;
	gr->sh = NULL;
}

static void fake_graph_run(struct fake *f, const struct gc_shape *sh, struct fake_graph *gr)
{
	gc_assert(gr->sh == sh); /* the graph built for this case */
	fake_seen(f);
	fake_stamp(f, sh);
	f->graph_runs++;
	gc_gap_expect_launch(&f->s->run, sh, true);
}

static void fake_stream_run(struct fake *f, const struct gc_shape *sh)
{
	gc_assert(sh->kind != GC_SHAPE_WIDE);
	fake_seen(f);
	fake_stamp(f, sh);
	f->stream_runs++;
	gc_gap_expect_launch(&f->s->run, sh, false);
}

GC_GAP_OPS(fake_ops, struct fake, struct fake_graph, fake_build, fake_destroy, fake_graph_run,
	   fake_stream_run);

/* Every case a dynamic subtest of its name, in order; graphs built once per graph case. */
static void test_matrix(void *fx)
{
	struct fake f = { .s = stamps_new(GC_GAP_NS_HZ) };

	(void)fx;
	f.dev = (struct gc_gap_dev){ &fake_ops, &f, &f.s->run };
	gc_gaps_cases(&f.dev, 3);
	gc_assert_cmpuint(f.nseen, ==, ARRAY_SIZE(matrix_names));
	for (size_t i = 0; i < f.nseen; i++)
		gc_assert_eq_str(f.seen[i], matrix_names[i]);
	gc_assert_cmpuint(f.builds, ==, 7);
	gc_assert_cmpuint(f.destroys, ==, 7);
	gc_assert_cmpuint(f.graph_runs, ==, 7 * 3);
	gc_assert_cmpuint(f.stream_runs, ==, 5 * 3);
	free(f.s);
}

/* gc_gaps_measure() keeps each run's stamps in turn and returns what it reported. */
static void test_measure_keep(void *fx)
{
	struct fake f = { .s = stamps_new(GC_GAP_NS_HZ) };
	const struct gc_shape *sh = gc_shape_get("chain16");
	uint64_t *keep = calloc(2 * 2 * 16, sizeof(*keep));
	struct fake_graph gr = { sh };
	struct gc_gap_stats st;

	(void)fx;
	gc_assert(keep);
	f.dev = (struct gc_gap_dev){ &fake_ops, &f, &f.s->run };
	st = gc_gaps_measure(&f.dev, sh, &gr, 2, "unit", keep);
	gc_assert_cmpuint(st.n, ==, 2 * 15);
	assert_near(st.p50, 1000);
	assert_near(st.span_max_us, (2000 + 2000 * 15 - 1000) / 1e3);
	gc_assert_cmpuint(keep[2 * 16 + 2 * 15 + 1], ==, 2000 + 2000 * 15);
	gc_assert_cmpuint(f.graph_runs, ==, 2);
	free(keep);
	free(f.s);
}

static void shape_seen(void *ctx, const struct gc_shape *sh)
{
	struct fake *f = ctx;

	gc_assert_eq_str(gc_current_dynamic(), sh->name);
	gc_assert(sh == &gc_shapes[f->nseen]);
	f->nseen++;
}

/* Every shape, in gc_shapes order, as the dynamic subtest of its name. */
static void test_each_shape(void *fx)
{
	struct fake f = { 0 };

	(void)fx;
	gc_each_shape(shape_seen, &f);
	gc_assert_cmpuint(f.nseen, ==, GC_N_SHAPES);
}

/* gc_gaps_collect() appends every run's gaps and span to g, as gc_gaps_measure() walks them. */
static void test_collect(void *fx)
{
	struct fake f = { .s = stamps_new(GC_GAP_NS_HZ) };
	const struct gc_shape *sh = gc_shape_get("chain16");
	struct fake_graph gr = { sh };
	struct gc_gaps g = { 0 };

	(void)fx;
	f.dev = (struct gc_gap_dev){ &fake_ops, &f, &f.s->run };
	gc_gaps_collect(&f.dev, sh, &gr, 3, &g, NULL);
	gc_gaps_collect(&f.dev, sh, NULL, 2, &g, NULL);
	gc_assert_cmpuint(g.n, ==, 5 * 15);
	gc_assert_cmpuint(g.runs, ==, 5);
	gc_assert_cmpuint(f.graph_runs, ==, 3);
	gc_assert_cmpuint(f.stream_runs, ==, 2);
	assert_near(g.v[0], 1000);
	gc_gaps_free(&g);
	free(f.s);
}

/* ------------------------------------------------------------ profiler sessions */

/* The smallest step between distinct values: one tick of the clock; 0 when none moved. */
static void test_quantum(void *fx)
{
	double v[] = { 832, 800, 768, 800, 896, 768 }, same[] = { 5, 5, 5 }, one[] = { 7 };
	double ticks[] = { 20, 10, 40 };

	(void)fx;
	assert_near(gc_gap_quantum(v, ARRAY_SIZE(v)), 32);
	assert_near(v[0], 768); /* sorted */
	assert_near(v[5], 896);
	assert_near(gc_gap_quantum(same, ARRAY_SIZE(same)), 0);
	assert_near(gc_gap_quantum(one, 1), 0);
	assert_near(gc_gap_quantum(ticks, ARRAY_SIZE(ticks)), 10);
}

static const char *const fake_modes[] = { "concurrent", "serialized" };
static const struct gc_sess_config fake_configs[] = {
	{ "kernel", "a kernel kind", true, GC_LEVEL_QUICK },
	{ "copies", "copies alone", false, GC_LEVEL_STANDARD },
	{ "kernel-api", "a kernel kind and API records", true, GC_LEVEL_LONG },
};

/* Each modal configuration in every rotation of the modes, the others once with mode 0 twice. */
static void test_sess_plans(void *fx)
{
	static const struct {
		const char *name;
		unsigned config, seq[2];
	} want[] = { { "kernel-cs", 0, { 0, 1 } },     { "kernel-sc", 0, { 1, 0 } },
		     { "copies", 1, { 0, 0 } },        { "kernel-api-cs", 2, { 0, 1 } },
		     { "kernel-api-sc", 2, { 1, 0 } } };
	struct gc_sess_ops ops = { .modes = fake_modes, .nmodes = 2, .configs = fake_configs,
				   .nconfigs = ARRAY_SIZE(fake_configs) };
	struct gc_sess_plan v[8], one[2];

	(void)fx;
	gc_assert_cmpuint(gc_sess_plans(&ops, v, ARRAY_SIZE(v)), ==, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		gc_assert_eq_str(v[i].name, want[i].name);
		gc_assert_cmpuint(v[i].config, ==, want[i].config);
		gc_assert_cmpuint(v[i].n, ==, 2);
		gc_assert_cmpuint(v[i].seq[0], ==, want[i].seq[0]);
		gc_assert_cmpuint(v[i].seq[1], ==, want[i].seq[1]);
	}
	gc_assert_cmpuint(gc_sess_plans(&ops, one, 2), ==, 5); /* counts past max */
	gc_assert_eq_str(one[1].name, "kernel-sc");
	gc_assert_cmpint(gc_sess_plan_named(&ops, "kernel-api-sc", &one[0]), ==, 0);
	gc_assert_cmpuint(one[0].config, ==, 2);
	gc_assert_cmpuint(one[0].seq[0], ==, 1);
	gc_assert_cmpint(gc_sess_plan_named(&ops, "kernel-api", &one[0]), ==, -ENOENT);
	gc_assert_cmpint(gc_sess_plan_named(&ops, NULL, &one[0]), ==, -ENOENT);
	ops.nmodes = 1; /* one mode: every configuration is one plan of two sessions */
	gc_assert_cmpuint(gc_sess_plans(&ops, v, ARRAY_SIZE(v)), ==, 3);
	gc_assert_eq_str(v[0].name, "kernel");
	gc_assert_eq_str(v[2].name, "kernel-api");
	gc_assert_cmpuint(v[2].n, ==, 2);
	gc_assert_cmpuint(v[2].seq[1], ==, 0);
}

/* Names picked from a comma list, in its order; anything else is -EINVAL. */
static void test_sess_pick(void *fx)
{
	static const char *const modes[] = { "concurrent", "serialized" };
	unsigned v[4] = { 9, 9, 9, 9 };

	(void)fx;
	gc_assert_cmpint(gc_sess_pick("serialized,concurrent", modes, 2, v, 4), ==, 2);
	gc_assert_cmpuint(v[0], ==, 1);
	gc_assert_cmpuint(v[1], ==, 0);
	gc_assert_cmpint(gc_sess_pick("serialized", modes, 2, v, 4), ==, 1);
	gc_assert_cmpint(gc_sess_pick("mid,deep", gc_sess_parts, GC_SESS_NPARTS, v, 4), ==, 2);
	gc_assert_cmpuint(v[0], ==, GC_SESS_MIDGRAPHS);
	gc_assert_cmpuint(v[1], ==, GC_SESS_DEEP);
	gc_assert_cmpint(gc_sess_pick("serial", modes, 2, v, 4), ==, -EINVAL);
	gc_assert_cmpint(gc_sess_pick("serializedx", modes, 2, v, 4), ==, -EINVAL);
	gc_assert_cmpint(gc_sess_pick("concurrent,", modes, 2, v, 4), ==, -EINVAL);
	gc_assert_cmpint(gc_sess_pick(",concurrent", modes, 2, v, 4), ==, -EINVAL);
	gc_assert_cmpint(gc_sess_pick("", modes, 2, v, 4), ==, -EINVAL);
	gc_assert_cmpint(gc_sess_pick("concurrent,serialized", modes, 2, v, 1), ==, -EINVAL);
}

/*
 * A residual: over both references by more than quantum + k x the largest
 * range of rounds. One tick is noise; a drift over pristine that the fresh
 * process shares is not the profiler's; a noisy after widens its own allowance.
 */
static void test_sess_judge(void *fx)
{
	const double p[] = { 800, 800, 800 }, tick[] = { 832, 832, 832 }, two[] = { 864, 832, 864 };
	const double tp[] = { 28000, 28100, 28050 }, tf[] = { 28300, 28320, 28310 };
	const double drift[] = { 28400, 28410, 28400 }, far[] = { 29000, 29010, 29000 };
	const double noisy[] = { 28000, 29000, 28500 };
	struct gc_sess_verdict v;

	(void)fx;
	gc_sess_judge(p, p, tick, 3, 32, 3, &v);
	assert_near(v.over_pristine, 32);
	assert_near(v.allowed, 32);
	gc_assert(!v.residual); /* exactly one quantum: noise */
	gc_sess_judge(p, p, two, 3, 32, 3, &v);
	assert_near(v.over_pristine, 64);
	assert_near(v.spread, 32);    /* the after's own range */
	assert_near(v.allowed, 128);
	gc_assert(!v.residual);
	gc_sess_judge(p, p, (const double[]){ 960, 960, 960 }, 3, 32, 3, &v);
	gc_assert(v.residual);        /* 160 ns over both, allowed 32 */
	gc_sess_judge(tp, tf, drift, 3, 32, 3, &v);
	assert_near(v.spread, 100);   /* pristine's range */
	assert_near(v.allowed, 332);
	assert_near(v.over_pristine, 350);
	assert_near(v.over_fresh, 90);
	gc_assert(!v.residual);       /* over pristine only: the machine drifted */
	gc_sess_judge(tp, tf, far, 3, 32, 3, &v);
	assert_near(v.over_fresh, 690);
	gc_assert(v.residual);
	gc_sess_judge(tp, tp, noisy, 3, 32, 3, &v);
	assert_near(v.over_pristine, 450);
	assert_near(v.allowed, 3032);
	gc_assert(!v.residual);
	gc_sess_judge(tf, tp, drift, 3, 32, 3, &v); /* over fresh only: another process's offset */
	gc_assert(v.over_fresh > v.allowed && v.over_pristine <= v.allowed && !v.residual);
}

static void fill_point(struct gc_sess_point *p, double base, bool stream)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		if (gc_sess_cases[c].stream && !stream)
			continue;
		p->have[c] = true;
		for (unsigned st = 0; st < GC_SESS_NSTAT; st++)
			for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
				p->v[c][st][r] = base + 1000.25 * c + 100 * st + r / 3.0;
	}
}

static bool same_point(const struct gc_sess_point *a, const struct gc_sess_point *b)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		if (a->have[c] != b->have[c])
			return false;
		for (unsigned st = 0; st < GC_SESS_NSTAT && a->have[c]; st++)
			for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
				if (a->v[c][st][r] != b->v[c][st][r])
					return false;
	}
	return true;
}

/* text with the first occurrence of what spoilt (its first character an 'x'): -EINVAL. */
static void assert_spoilt(const char *text, const char *what)
{
	struct gc_sess_report back;
	char *t = strdup(text);

	gc_assert(t && strstr(t, what));
	*strstr(t, what) = 'x';
	gc_assert_cmpint(gc_sess_parse(t, &back), ==, -EINVAL);
	free(t);
}

/* text up to the first occurrence of at: parsed whole (0) into back. */
static void text_cut(const char *text, const char *at, struct gc_sess_report *back)
{
	char *t = strdup(text);

	gc_assert(t && strstr(t, at));
	*strstr(t, at) = '\0';
	gc_assert_cmpint(gc_sess_parse(t, back), ==, 0);
	free(t);
}

/* A plan's report reads back exactly, among the framework's own lines; a part missing fails. */
static void test_sess_report(void *fx)
{
	struct gc_sess_report *r = calloc(2, sizeof(*r)), *back = r + 1;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)fx;
	gc_assert(f && r);
	r->quantum = 32, r->n = 2, r->finalized = true;
	fill_point(&r->pristine, 768.5, true);
	for (unsigned i = 0; i < 2; i++)
		for (unsigned set = 0; set < GC_SESS_NSETS; set++)
			fill_point(&r->after[i][set], 800 + 10 * i + set, set == GC_SESS_OLD);
	for (unsigned set = 0; set < GC_SESS_NSETS; set++)
		fill_point(&r->fin[set], 900 + set, set == GC_SESS_OLD);
	fputs("Starting subtest: profiler-sessions\n", f);
	gc_sess_print(f, r);
	fputs("Subtest profiler-sessions: SUCCESS (1.000s)\n", f);
	fclose(f);
	gc_assert_cmpint(gc_sess_parse(buf, back), ==, 0);
	assert_near(back->quantum, 32);
	gc_assert_cmpuint(back->n, ==, 2);
	gc_assert(back->finalized);
	gc_assert(same_point(&back->pristine, &r->pristine));
	for (unsigned set = 0; set < GC_SESS_NSETS; set++) {
		gc_assert(same_point(&back->after[0][set], &r->after[0][set]));
		gc_assert(same_point(&back->after[1][set], &r->after[1][set]));
		gc_assert(same_point(&back->fin[set], &r->fin[set]));
	}
	assert_spoilt(buf, "gc-sess s2-new wide16 graph-time");  /* a case's statistic */
	assert_spoilt(buf, "gc-sess pristine stream-chain16");   /* the stream case */
	assert_spoilt(buf, "gc-sess s1-old stream-chain16 gap"); /* ... where it is measured */
	assert_spoilt(buf, "gc-sess fin-old chain16 gap");       /* the finalize's */
	assert_spoilt(buf, "gc-sess quantum");
	assert_spoilt(buf, "gc-sess sessions");
	assert_spoilt(buf, "gc-sess end");                       /* cut short */
	text_cut(buf, "gc-sess fin-mid", back); /* the finalize's part cut short: not finalized */
	gc_assert(!back->finalized);
	gc_assert_cmpint(gc_sess_parse("gc-sess quantum 32\ngc-sess sessions 1\n"
				       "gc-sess pristine chain16 gap-p50 1 2\ngc-sess end\n", back),
			 ==, -EINVAL); /* two rounds of three */
	gc_assert_cmpint(gc_sess_parse("gc-sess s9-old chain16 gap-p50 1 2 3\n", back), ==,
			 -EINVAL); /* no such session */
	gc_assert_cmpint(gc_sess_parse("gc-sess pristine nochain gap-p50 1 2 3\n", back), ==,
			 -EINVAL);
	gc_assert_cmpint(gc_sess_parse("", back), ==, -EINVAL);
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len); /* the mid set absent (not measured): whole all the same */
	gc_assert(f);
	memset(&r->after[0][GC_SESS_MID], 0, sizeof(r->after[0][GC_SESS_MID]));
	memset(&r->after[1][GC_SESS_MID], 0, sizeof(r->after[1][GC_SESS_MID]));
	r->finalized = false;
	gc_sess_print(f, r);
	fclose(f);
	gc_assert_cmpint(gc_sess_parse(buf, back), ==, 0);
	gc_assert(!back->after[1][GC_SESS_MID].have[0]);
	gc_assert(!back->finalized);
	free(buf);
	free(r);
}

/*
 * The cases prof_sessions.h lists (the graph shapes but chain2, and stream-chain16
 * last), their launch counts, and what a process has mapped.
 */
static void test_sess_cases(void *fx)
{
	(void)fx;
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		gc_assert(gc_shape_find(gc_sess_cases[c].shape));
	gc_assert_eq_str(gc_sess_cases[GC_SESS_NCASES - 1].name, "stream-chain16");
	gc_assert(gc_sess_cases[GC_SESS_NCASES - 1].stream);
	gc_assert_cmpuint(gc_sess_launches(gc_shape_get("chain8192")), ==, GC_SESS_LAUNCHES_LONG);
	gc_assert_cmpuint(gc_sess_launches(gc_shape_get("wide256")), ==, GC_SESS_LAUNCHES);
	gc_assert(gc_sess_mapped("libc"));
	gc_assert(!gc_sess_mapped("libno-such-profiler"));
}

/* A profiler that adds 64 ns to every gap while attached, and counts what it saw. */
static void fake_attach(void *ctx, unsigned m, unsigned config)
{
	struct fake *f = ctx;

	gc_assert(!f->tracing || f->leave_on);
	gc_assert(f->sessions < ARRAY_SIZE(f->modes));
	gc_assert_cmpuint(fake_configs[config].level, <=, GC_LEVEL_STANDARD);
	f->modes[f->sessions++] = m;
	f->tracing = true;
	f->traced = 0;
}

static uint64_t fake_workload(void *ctx, unsigned config)
{
	(void)ctx, (void)config;
	return 7; /* the vendor's own dispatches (the deep queue), unseen by the fake device */
}

/* Every kernel dispatch the lib made while attached is in the count it hands over. */
static void fake_detach(void *ctx, unsigned m, unsigned config, uint64_t dispatches)
{
	struct fake *f = ctx;

	(void)m, (void)config;
	gc_assert_cmpuint(dispatches, ==, f->traced + 7);
	f->tracing = f->leave_on;
}

static uint64_t fake_stray(void *ctx)
{
	(void)ctx;
	return 0;
}

/* Finalizing the fake profiler ends its cost, leaked or not. */
static void fake_finalize(void *ctx)
{
	struct fake *f = ctx;

	f->tracing = false;
	f->finalized = true;
}

static const struct gc_sess_ops fake_sess = {
	.modes = fake_modes, .nmodes = 2, .configs = fake_configs,
	.nconfigs = ARRAY_SIZE(fake_configs), .lib = "libno-such-profiler", .pristine = NULL,
	.attach = fake_attach, .workload = fake_workload, .detach = fake_detach,
	.stray = fake_stray, .finalize = fake_finalize, .finalize_what = "fake_finalize",
};

#define FAKE_LEAK_ENV "GPUCONFORM_TEST_FAKE_LEAK"

static void fake_sessions(void *arg)
{
	struct fake *f = arg;

	f->dev = (struct gc_gap_dev){ &fake_ops, f, &f->s->run };
	gc_sess_run(&f->dev, &fake_sess, f, gc_current_subtest());
}

/* In a plan's process: its sessions took the modes its name says, and it was finalized. */
static void fake_plan(struct fake *f)
{
	const char *plan = gc_sess_plan_env();
	bool sc = strstr(plan, "-sc") != NULL;

	fake_sessions(f);
	gc_assert_cmpuint(f->sessions, ==, 2);
	gc_assert_cmpuint(f->modes[0], ==, sc ? 1 : 0);
	gc_assert_cmpuint(f->modes[1], ==, !strcmp(plan, "copies") ? 0 : sc ? 0 : 1);
	gc_assert(f->finalized);
	gc_assert_cmpuint(f->builds, ==, f->destroys); /* every graph given back */
}

/* In a forked child: this subtest again, as its own process, with a leaking profiler; quiet. */
static void leaky_subtest(void *arg)
{
	int null = open("/dev/null", O_WRONLY);

	(void)arg;
	setenv(FAKE_LEAK_ENV, "1", 1);
	if (null >= 0 && dup2(null, STDOUT_FILENO) >= 0 && dup2(null, STDERR_FILENO) >= 0)
		execl("/proc/self/exe", program_invocation_name, "--run-subtest", "sess-run",
		      (char *)NULL);
	_exit(127);
}

/*
 * The whole subtest on a fake device: the plans of the standard level
 * (kernel-cs, kernel-sc, copies), each in a process of its own (this
 * binary re-executed: this subtest runs the plan there), judged here. A
 * profiler that leaves nothing behind passes; one whose detach leaves it on
 * (FAKE_LEAK_ENV, inherited by the plans' processes) fails the subtest,
 * run as a process of its own (a dynamic subtest's verdict is its process's).
 */
static void test_sess_run(void *fx)
{
	struct fake f = { .s = stamps_new(GC_GAP_NS_HZ), .extra = 64,
			  .leave_on = getenv(FAKE_LEAK_ENV) != NULL };

	(void)fx;
	if (gc_sess_plan_env() || getenv(FAKE_LEAK_ENV)) { /* a plan's process, or leaky_subtest */
		if (gc_sess_plan_env())
			fake_plan(&f);
		else
			fake_sessions(&f);
		free(f.s);
		return;
	}
	unsetenv(GC_LEVEL_ENV);
	setenv(GC_SESS_FINALIZE_ENV, "1", 1);
	fake_sessions(&f);
	gc_assert_cmpuint(gc_checks_failed(), ==, 0);
	gc_assert_cmpuint(f.sessions, ==, 0); /* this process, the fresh one, never attached */
	gc_assert_cmpuint(f.builds, ==, f.destroys);
	gc_expect_child_exit(leaky_subtest, NULL, GC_EXIT_FAILURE, 120000);
	/* narrowed: the sessions without graphs; the dispatches still add up */
	setenv(GC_SESS_PARTS_ENV, "stream,deep", 1);
	fake_sessions(&f);
	unsetenv(GC_SESS_PARTS_ENV);
	gc_assert_cmpuint(gc_checks_failed(), ==, 0);
	gc_assert_cmpuint(f.builds, ==, f.destroys);
	free(f.s);
}

/*
 * The subtest once, as the runner runs it: runner/tests/test_prof_sessions.py
 * reads its output with the runner's own parser (a dynamic subtest per plan,
 * no protocol anomaly from the plans' relayed lines).
 */
static void test_sess_protocol(void *fx)
{
	struct fake f = { .s = stamps_new(GC_GAP_NS_HZ), .extra = 64 };

	(void)fx;
	setenv(GC_SESS_FINALIZE_ENV, "1", 1);
	if (gc_sess_plan_env())
		fake_plan(&f);
	else
		fake_sessions(&f);
	free(f.s);
}

/* ------------------------------------------------------------ bracketing */

static const struct gc_bracket_rule rule = { .slack_ns = 100, .ppm = 50, .min_seg = 16,
					     .max_steps = 2 };

/*
 * n dispatches of 1 us, 2 us apart on the device clock from 1e9 ns; each
 * record is the kernel widened by 400 ns on both sides, on a profiler clock
 * 1 ms ahead (D = -1,000,000), plus step_ns from dispatch step_at on.
 * Stored in reverse order: the check sorts them.
 */
static void make(struct gc_bracket_rec *v, size_t n, size_t step_at, int64_t step_ns)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t s = 1000000000ull + 2000 * i;
		int64_t d = 1000000 + (i >= step_at ? step_ns : 0);

		v[n - 1 - i] = (struct gc_bracket_rec){ s, s + 1000, s + d - 400, s + 1000 + d + 400,
							(unsigned)i };
	}
}

/* One offset fits all: no step, D = -1 ms in the middle of an 800 ns wide interval. */
static void test_bracket_steady(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 64, 0);
	gc_assert_ok(gc_bracket_check(v, 64, &rule, &b));
	gc_assert_cmpuint(b.steps, ==, 0);
	gc_assert_cmpint(b.tight, ==, 800);
	gc_assert_cmpint(b.mid0, ==, -1000000);
	gc_assert_cmpuint(v[0].tag, ==, 0); /* sorted by stamp start */
	gc_assert_ok(gc_bracket_check(v, 0, &rule, &b));
}

/* A 2.2 us step after 32 of 64 records: accepted, measured. */
static void test_bracket_step(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 32, 2200);
	gc_assert_ok(gc_bracket_check(v, 64, &rule, &b));
	gc_assert_cmpuint(b.steps, ==, 1);
	gc_assert_cmpint(b.max_step, ==, 2200 - 800);
	gc_assert_cmpint(b.mid0, ==, -1000000);
}

/* One record mistimed by 2.2 us in the middle: a segment of one, fails naming it. */
static void test_bracket_outlier(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 64, 0);
	for (size_t i = 0; i < 64; i++)
		if (v[i].tag == 40)
			v[i].rec_start += 2200, v[i].rec_end += 2200;
	gc_assert_cmpint(gc_bracket_check(v, 64, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 41); /* 40 starts a segment, 41 cannot join it */
}

/* A step 4 records before the end cannot be told from mistimed records: fails. */
static void test_bracket_late_step(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 60, 2200);
	gc_assert_cmpint(gc_bracket_check(v, 64, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 60);
}

/* A record shorter than its kernel's stamps brackets nothing, whatever the offset. */
static void test_bracket_short(void *fx)
{
	struct gc_bracket_rec v[64];
	struct gc_bracket b;

	(void)fx;
	make(v, 64, 64, 0);
	for (size_t i = 0; i < 64; i++)
		if (v[i].tag == 7)
			v[i].rec_end = v[i].rec_start + 500;
	gc_assert_cmpint(gc_bracket_check(v, 64, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 7);
}

/* Three steps in one walk exceed max_steps. */
static void test_bracket_many_steps(void *fx)
{
	struct gc_bracket_rec v[128];
	struct gc_bracket b;

	(void)fx;
	make(v, 128, 128, 0);
	for (size_t i = 0; i < 128; i++) /* +2.2 us per 32 records: steps at 32, 64, 96 */
		v[i].rec_start += 2200 * (v[i].tag / 32), v[i].rec_end += 2200 * (v[i].tag / 32);
	gc_assert_cmpint(gc_bracket_check(v, 128, &rule, &b), ==, -EINVAL);
	gc_assert_cmpuint(v[b.bad].tag, ==, 96);
	gc_assert_cmpuint(b.steps, ==, 3);
}

static const struct gc_subtest subtests[] = {
	{ "shapes", test_shapes, "the shapes table" },
	{ "stats", test_stats, "p50, p99, max, bubbles, mean span" },
	{ "bubble-edge", test_bubble_edge, "the bubble rule is strictly above 4 x p50" },
	{ "empty", test_empty, "no gap: -EINVAL" },
	{ "histogram", test_histogram, "distinct gaps ascending with their counts; input untouched" },
	{ "histogram-many", test_histogram_many, "100000 gaps: counts sum to n, values ascending" },
	{ "metric-hist", test_metric_hist, "the histogram's JSON line and median; bad ones fail" },
	{ "report-every-gap", test_report_every_gap, "gap.MODE.SHAPE holds every gap; names kept" },
	{ "gap-ns", test_gap_ns, "device ticks to ns" },
	{ "run-chain", test_run_chain, "a chain's gaps and span, in ns" },
	{ "run-wide", test_run_wide, "wide: root to each branch, the latest branch to the join" },
	{ "run-mixed", test_run_mixed, "mixed: gaps between its kernels, in ticks" },
	{ "run-long-gaps", test_run_long_gaps, "long gaps counted per gap set" },
	{ "backwards", test_backwards, "a clock that went backwards fails the walks" },
	{ "launches", test_launches, "launch gaps from each launch's last dispatch to the next's first" },
	{ "counts", test_counts, "every dispatch once; =stamp makes a graph launch fail" },
	{ "cases", test_cases, "the gaps matrix's case names and order" },
	{ "matrix", test_matrix, "the matrix's dynamic subtests and what it asks of the vendor" },
	{ "measure-keep", test_measure_keep, "a measured set keeps each run's stamps" },
	{ "each-shape", test_each_shape, "every shape as a dynamic subtest" },
	{ "collect", test_collect, "collected runs append gaps and spans, reported nowhere" },
	{ "quantum", test_quantum, "the clock's quantum: the smallest step between values" },
	{ "sess-plans", test_sess_plans, "plans: each configuration in every order of the modes" },
	{ "sess-pick", test_sess_pick, "parts picked by name from a comma list" },
	{ "sess-judge", test_sess_judge, "a residual is over both references beyond the noise" },
	{ "sess-report", test_sess_report, "a plan's report reads back exactly" },
	{ "sess-cases", test_sess_cases, "the judged cases; a library mapped or not" },
	{ "sess-run", test_sess_run, "on a fake device: clean detaches pass, a leak fails" },
	{ "sess-protocol", test_sess_protocol, "the subtest once, its plans as dynamic subtests" },
	{ "bracket-steady", test_bracket_steady, "records bracket their stamps under one offset" },
	{ "bracket-step", test_bracket_step, "a clock step between two long runs is accepted" },
	{ "bracket-outlier", test_bracket_outlier, "one mistimed record fails" },
	{ "bracket-late-step", test_bracket_late_step, "a step too near the end fails" },
	{ "bracket-short", test_bracket_short, "a record shorter than its stamps fails" },
	{ "bracket-many-steps", test_bracket_many_steps, "more than max_steps steps fail" },
	{ 0 }
};

GC_MAIN(.name = "unit_gaps", .subtests = subtests)
