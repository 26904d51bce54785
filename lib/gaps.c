/* SPDX-License-Identifier: MIT */
#include "gaps.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "core_private.h"
#include "measure.h"

const struct gc_shape gc_shapes[GC_N_SHAPES] = {
	{ "chain2", GC_SHAPE_CHAIN, 2, 2 },       { "chain16", GC_SHAPE_CHAIN, 16, 16 },
	{ "chain256", GC_SHAPE_CHAIN, 256, 256 }, { "chain8192", GC_SHAPE_CHAIN, 8192, 8192 },
	{ "wide16", GC_SHAPE_WIDE, 16, 18 },      { "wide256", GC_SHAPE_WIDE, 256, 258 },
	{ "mixed", GC_SHAPE_MIXED, 16, 16 },
};

const struct gc_shape *gc_shape_find(const char *name)
{
	for (unsigned i = 0; i < GC_N_SHAPES; i++)
		if (strcmp(gc_shapes[i].name, name) == 0)
			return &gc_shapes[i];
	return NULL;
}

const struct gc_shape *gc_shape_get(const char *name)
{
	const struct gc_shape *sh = gc_shape_find(name);

	gc_assert_f(sh, "no shape %s", name);
	return sh;
}

static int push(double **v, size_t *n, size_t *cap, double x)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1u << 16;
		double *p = realloc(*v, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = ncap;
	}
	(*v)[(*n)++] = x;
	return 0;
}

int gc_gaps_add(struct gc_gaps *g, double gap_ns)
{
	return push(&g->v, &g->n, &g->cap, gap_ns);
}

int gc_gaps_add_span(struct gc_gaps *g, double span_us)
{
	return push(&g->span_us, &g->runs, &g->runs_cap, span_us);
}

void gc_gaps_free(struct gc_gaps *g)
{
	free(g->v);
	free(g->span_us);
	memset(g, 0, sizeof(*g));
}

int gc_gap_stats(const struct gc_gaps *g, struct gc_gap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (g->n == 0)
		return -EINVAL;
	st->n = g->n;
	st->p50 = gc_stat_median(g->v, g->n);
	st->p99 = gc_stat_percentile(g->v, g->n, 99);
	st->max = gc_stat_max(g->v, g->n);
	for (size_t i = 0; i < g->n; i++)
		st->bubbles += g->v[i] > GC_GAP_BUBBLE_FACTOR * st->p50;
	st->span_us = g->runs ? gc_stat_mean(g->span_us, g->runs) : 0;
	st->span_max_us = g->runs ? gc_stat_max(g->span_us, g->runs) : 0;
	return 0;
}

size_t gc_gap_subsample_step(size_t n, size_t max, size_t *count)
{
	size_t step = max && n > max ? (n + max - 1) / max : 1;

	*count = n ? (n - 1) / step + 1 : 0;
	return step;
}

static void metric1(const char *what, const char *mode, const char *shape, const char *unit,
		    double x)
{
	char name[160];

	snprintf(name, sizeof(name), "%s.%s.%s", what, mode, shape);
	gc_metric(name, unit, GC_LOWER_IS_BETTER, &x, 1);
}

void gc_gap_ratio(const char *what, const char *shape, double x)
{
	metric1("overhead", what, shape, "x", x);
}

static double ratio_of(double x, double base)
{
	return x / (base > 0 ? base : 1); /* against 1 (ns, us) where the reference is 0 */
}

void gc_gap_ratios(const char *what, const char *shape, const struct gc_gap_stats *x,
		   const struct gc_gap_stats *base, bool time)
{
	char name[64];

	snprintf(name, sizeof(name), "gap-p50-%s-over-graph", what);
	gc_gap_ratio(name, shape, ratio_of(x->p50, base->p50));
	snprintf(name, sizeof(name), "gap-p99-%s-over-graph", what);
	gc_gap_ratio(name, shape, ratio_of(x->p99, base->p99));
	if (!time)
		return;
	snprintf(name, sizeof(name), "graph-time-%s-over-graph", what);
	gc_gap_ratio(name, shape, ratio_of(x->span_us, base->span_us));
}

struct gc_gap_stats gc_gaps_report(const struct gc_gaps *g, const char *mode, const char *shape)
{
	struct gc_gap_stats st;
	size_t nsub, step = gc_gap_subsample_step(g->n, GC_GAP_METRIC_SAMPLES, &nsub);
	double *sub = malloc((nsub ? nsub : 1) * sizeof(*sub));
	char name[160];

	gc_assert_f(gc_gap_stats(g, &st) == 0, "%s.%s: no gaps recorded", mode, shape);
	gc_assert_f(sub, "out of memory for %zu gap samples", nsub);
	for (size_t i = 0, k = 0; k < nsub; i += step)
		sub[k++] = g->v[i];
	snprintf(name, sizeof(name), "gap.%s.%s", mode, shape);
	gc_metric(name, "ns", GC_LOWER_IS_BETTER, sub, nsub);
	metric1("gap-p50", mode, shape, "ns", st.p50);
	metric1("gap-p99", mode, shape, "ns", st.p99);
	metric1("gap-max", mode, shape, "ns", st.max);
	metric1("bubbles", mode, shape, "count", (double)st.bubbles);
	if (g->runs) {
		snprintf(name, sizeof(name), "graph-time.%s.%s", mode, shape);
		gc_metric(name, "us", GC_LOWER_IS_BETTER, g->span_us, g->runs);
	}
	gc_info("%-20s %-10s gaps %zu: p50 %.0f ns, p99 %.0f ns, max %.0f ns, bubbles %llu", mode,
		shape, g->n, st.p50, st.p99, st.max, (unsigned long long)st.bubbles);
	free(sub);
	return st;
}

/* ------------------------------------------------------------ one run's stamps */

double gc_gap_ns(const struct gc_gap_run *r, uint64_t ticks)
{
	if (r->hz == GC_GAP_NS_HZ)
		return (double)ticks;
	return (double)ticks * 1e9 / (double)r->hz;
}

static const char *clock_unit(const struct gc_gap_run *r)
{
	return r->hz == GC_GAP_NS_HZ ? "ns" : "ticks";
}

void gc_gap_expect_counts(const struct gc_gap_run *r, unsigned n, const char *what)
{
	for (unsigned i = 0; i < n; i++)
		gc_assert_f(r->counts[i] == 1, "%s: dispatch %u of %u ran %u times (%s)", what, i,
			    n, r->counts[i], r->counts[i] ? "replayed" : "lost: it never ran");
}

bool gc_bubbles_remove(const char *what)
{
	const char *v = getenv("GPUCONFORM_BUBBLES_REMOVE");

	return v && strcmp(v, what) == 0;
}

void gc_gap_expect_launch(struct gc_gap_run *r, const struct gc_shape *sh, bool graph)
{
	if (graph && gc_bubbles_remove("stamp"))
		r->counts[sh->kernels - 1] = 0;
	gc_gap_expect_counts(r, sh->kernels, sh->name);
}

/*
 * DESIGN.md, bubbles: "the gap between them is measured per kernel". A
 * dispatch starts after the one it depends on ended, both stamped on one
 * device clock: a negative gap means that clock went backwards or the
 * dependency was not honoured.
 */
double gc_gap_of(const struct gc_gap_run *r, unsigned a, unsigned c)
{
	uint64_t a_start = r->stamps[2 * a], end = r->stamps[2 * a + 1], start = r->stamps[2 * c];
	const char *u = clock_unit(r);

	gc_assert_f(a_start <= end, "dispatch %u ended (%llu %s) before it started (%llu %s): "
		    "the device clock went backwards", a, (unsigned long long)end, u,
		    (unsigned long long)a_start, u);
	gc_assert_f(start >= end, "dispatch %u started at %llu %s, before dispatch %u it depends "
		    "on ended at %llu %s: the device clock went backwards or the dependency was "
		    "not honoured", c, (unsigned long long)start, u, a, (unsigned long long)end, u);
	return gc_gap_ns(r, start - end);
}

static void gap_add(struct gc_gaps *g, double gap_ns)
{
	gc_assert_f(gc_gaps_add(g, gap_ns) == 0, "out of memory for %zu gap samples", g->n + 1);
}

static void span_add(struct gc_gaps *g, double span_us)
{
	gc_assert_f(gc_gaps_add_span(g, span_us) == 0, "out of memory for %zu runs", g->runs + 1);
}

static void add_gap(const struct gc_gap_run *r, struct gc_gaps *g, unsigned a, unsigned c)
{
	double gap = gc_gap_of(r, a, c);

	if (gap > GC_GAP_LONG_NS && g->long_gaps++ < 5)
		gc_info("long gap: %.0f ns from dispatch %u to %u of run %zu (device clock %llu %s)",
			gap, a, c, g->runs, (unsigned long long)r->stamps[2 * c], clock_unit(r));
	gap_add(g, gap);
}

/* The last end - the first start of dispatches [0, n), us. */
static double span_of(const struct gc_gap_run *r, unsigned n)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (unsigned i = 0; i < n; i++) {
		first = r->stamps[2 * i] < first ? r->stamps[2 * i] : first;
		last = r->stamps[2 * i + 1] > last ? r->stamps[2 * i + 1] : last;
	}
	return gc_gap_ns(r, last - first) / 1e3;
}

void gc_gap_add_run(const struct gc_gap_run *r, const struct gc_shape *sh, struct gc_gaps *g)
{
	unsigned join = sh->n + 1, late = 1;

	if (sh->kind == GC_SHAPE_WIDE) {
		for (unsigned i = 1; i <= sh->n; i++) {
			add_gap(r, g, 0, i);
			if (r->stamps[2 * i + 1] > r->stamps[2 * late + 1])
				late = i;
		}
		add_gap(r, g, late, join);
	} else {
		for (unsigned i = 1; i < sh->n; i++)
			add_gap(r, g, i - 1, i);
	}
	/* >= 0: dispatch 0's start <= its end (gc_gap_of) bounds the first and the last */
	span_add(g, span_of(r, sh->kernels));
}

void gc_gap_add_launches(const struct gc_gap_run *r, unsigned n, unsigned per,
			 struct gc_gaps *g)
{
	uint64_t first = r->stamps[0], last = r->stamps[2 * (size_t)n * per - 1];

	for (unsigned l = 1; l < n; l++)
		add_gap(r, g, per * l - 1, per * l);
	gc_assert_f(last >= first, "the last launch ended before the first started: the device "
		    "clock went backwards");
	span_add(g, gc_gap_ns(r, last - first) / 1e3);
}

void gc_gaps_launch_gap(const struct gc_gap_run *r, unsigned n)
{
	struct gc_gaps g = { 0 };

	gc_gap_expect_counts(r, 2 * n, "launch-gap");
	gc_gap_add_launches(r, n, 2, &g);
	gc_gaps_report(&g, "graph", "launch");
	gc_gaps_free(&g);
}

/* ------------------------------------------------------------ a vendor's launches */

void gc_gaps_collect(const struct gc_gap_dev *d, const struct gc_shape *sh, void *graph,
		     unsigned launches, struct gc_gaps *g, uint64_t *keep)
{
	size_t per = 2 * (size_t)sh->kernels;

	for (unsigned l = 0; l < launches; l++) {
		if (graph)
			d->ops->run_graph(d->ctx, sh, graph);
		else
			d->ops->run_stream(d->ctx, sh);
		gc_gap_add_run(d->run, sh, g);
		if (keep)
			memcpy(&keep[l * per], d->run->stamps, per * sizeof(*keep));
	}
}

struct gc_gap_stats gc_gaps_measure(const struct gc_gap_dev *d, const struct gc_shape *sh,
				    void *graph, unsigned launches, const char *mode,
				    uint64_t *keep)
{
	struct gc_gaps g = { 0 };
	struct gc_gap_stats st;

	gc_gaps_collect(d, sh, graph, launches, &g, keep);
	st = gc_gaps_report(&g, mode, sh->name);
	gc_gaps_free(&g);
	return st;
}

static const struct {
	const char *name;
	bool stream;
} gap_modes[] = { { "stream", true }, { "graph", false } };

size_t gc_gap_cases(struct gc_gap_case *v, size_t max)
{
	size_t n = 0;

	for (size_t m = 0; m < ARRAY_SIZE(gap_modes); m++)
		for (unsigned i = 0; i < GC_N_SHAPES; i++) {
			if (gap_modes[m].stream && gc_shapes[i].kind == GC_SHAPE_WIDE)
				continue; /* a stream has no fan-out */
			if (n < max)
				v[n] = (struct gc_gap_case){ gap_modes[m].name, gap_modes[m].stream,
							     &gc_shapes[i] };
			n++;
		}
	return n;
}

struct gap_matrix {
	const struct gc_gap_dev *d;
	unsigned launches;
};

static const char *gap_case_name(const void *vc, char *buf, size_t len)
{
	const struct gc_gap_case *c = vc;

	snprintf(buf, len, "%s-%s", c->mode, c->sh->name);
	return buf;
}

static void gap_case(void *ctx, const void *vc)
{
	const struct gap_matrix *m = ctx;
	const struct gc_gap_case *c = vc;
	const struct gc_gap_ops *ops = m->d->ops;
	union {
		max_align_t align;
		unsigned char bytes[GC_GAP_GRAPH_BYTES];
	} graph;

	memset(&graph, 0, sizeof(graph));
	if (!c->stream)
		ops->build(m->d->ctx, c->sh, &graph);
	gc_gaps_measure(m->d, c->sh, c->stream ? NULL : &graph, m->launches, c->mode, NULL);
	if (!c->stream)
		ops->destroy(m->d->ctx, &graph);
}

void gc_gaps_cases(const struct gc_gap_dev *d, unsigned launches)
{
	struct gc_gap_case v[GC_GAP_MAX_CASES];
	struct gap_matrix m = { d, launches };
	struct gc_cases cases = { .first = v, .n = gc_gap_cases(v, ARRAY_SIZE(v)),
				  .size = sizeof(*v), .name = gap_case_name, .run = gap_case };

	gc_each_case(&cases, &m);
}

struct shape_body {
	void (*body)(void *ctx, const struct gc_shape *sh);
	void *ctx;
};

static const char *shape_name(const void *c, char *buf, size_t len)
{
	(void)buf, (void)len;
	return ((const struct gc_shape *)c)->name;
}

static void shape_case(void *ctx, const void *c)
{
	const struct shape_body *b = ctx;

	b->body(b->ctx, c);
}

void gc_each_shape(void (*body)(void *ctx, const struct gc_shape *sh), void *ctx)
{
	struct shape_body b = { body, ctx };
	struct gc_cases cases = { .first = gc_shapes, .n = GC_N_SHAPES,
				  .size = sizeof(gc_shapes[0]), .name = shape_name, .run = shape_case };

	gc_each_case(&cases, &b);
}

/* ------------------------------------------------------------ profiler sessions */

const char *const gc_sess_stats[GC_SESS_NSTAT] = { "gap-p50", "graph-time" };

const struct gc_sess_case gc_sess_cases[GC_SESS_NCASES] = {
	{ "chain16", "chain16", false },     { "chain256", "chain256", false },
	{ "chain8192", "chain8192", false }, { "wide16", "wide16", false },
	{ "wide256", "wide256", false },     { "mixed", "mixed", false },
	{ "stream-chain16", "chain16", true },
};

unsigned gc_sess_launches(const struct gc_shape *sh)
{
	return sh->kernels >= 4096 ? GC_SESS_LAUNCHES_LONG : GC_SESS_LAUNCHES;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double gc_gap_quantum(double *v, size_t n)
{
	double q = 0;

	qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 1; i < n; i++) {
		double d = v[i] - v[i - 1];

		if (d > 0 && (q == 0 || d < q))
			q = d;
	}
	return q;
}

size_t gc_sess_order(const unsigned *fwd, unsigned n, unsigned *seq, size_t max)
{
	size_t k = 0;

	for (unsigned i = 0; i < 2 * n; i++, k++)
		if (k < max)
			seq[k] = fwd[i < n ? i : 2 * n - 1 - i];
	return k;
}

const char *const gc_sess_parts[GC_SESS_NPARTS] = { "stream", "graphs", "mid", "deep" };

int gc_sess_pick(const char *list, const char *const *names, unsigned n, unsigned *out,
		 size_t max)
{
	size_t k = 0;

	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ",");
		unsigned i = 0;

		while (i < n && (strlen(names[i]) != len || strncmp(names[i], p, len)))
			i++;
		if (!len || i == n || k == max)
			return -EINVAL;
		out[k++] = i;
		p += len;
		if (!*p)
			return (int)k;
	}
}

static double range_of(const double *v, unsigned n)
{
	return gc_stat_max(v, n) - gc_stat_min(v, n);
}

void gc_sess_judge(const double *pristine, const double *fresh, const double *after,
		   unsigned rounds, double quantum, double k, struct gc_sess_verdict *v)
{
	double a = gc_stat_median(after, rounds);

	v->over_pristine = a - gc_stat_median(pristine, rounds);
	v->over_fresh = a - gc_stat_median(fresh, rounds);
	v->spread = fmax(range_of(pristine, rounds), fmax(range_of(fresh, rounds),
							  range_of(after, rounds)));
	v->allowed = quantum + k * v->spread;
	v->residual = v->over_pristine > v->allowed && v->over_fresh > v->allowed;
}

#define SESS_TAG "gc-sess-fresh"

void gc_sess_print(FILE *f, const struct gc_sess_point *p, double quantum)
{
	fprintf(f, SESS_TAG " quantum %.17g\n", quantum);
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		for (unsigned st = 0; st < GC_SESS_NSTAT && p->have[c]; st++) {
			fprintf(f, SESS_TAG " %s %s", gc_sess_cases[c].name, gc_sess_stats[st]);
			for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
				fprintf(f, " %.17g", p->v[c][st][r]);
			fputc('\n', f);
		}
	fflush(f);
}

/* "V0 V1 ... V(n-1)" and nothing more into v: 0 or -EINVAL. */
static int parse_values(const char *s, double *v, unsigned n)
{
	char *end;

	for (unsigned i = 0; i < n; i++, s = end) {
		v[i] = strtod(s, &end);
		if (end == s)
			return -EINVAL;
	}
	while (*s == ' ')
		s++;
	return *s ? -EINVAL : 0;
}

static int sess_index(const char *name, bool stat)
{
	for (unsigned i = 0; i < (stat ? GC_SESS_NSTAT : GC_SESS_NCASES); i++)
		if (!strcmp(name, stat ? gc_sess_stats[i] : gc_sess_cases[i].name))
			return (int)i;
	return -1;
}

/* One line "gc-sess-fresh ..." (NUL-terminated, no newline): 0, 1 for another line, -EINVAL. */
static int parse_sess_line(const char *l, struct gc_sess_point *p, double *quantum,
			   bool seen[GC_SESS_NCASES][GC_SESS_NSTAT], bool *have_q)
{
	char name[64], stat[32];
	int used = 0, c, st;

	if (strncmp(l, SESS_TAG " ", sizeof(SESS_TAG)))
		return 1;
	l += sizeof(SESS_TAG);
	if (sscanf(l, "quantum %n", &used) == 0 && used) {
		*have_q = true;
		return parse_values(l + used, quantum, 1);
	}
	if (sscanf(l, "%63s %31s %n", name, stat, &used) != 2 || !used)
		return -EINVAL;
	c = sess_index(name, false);
	st = sess_index(stat, true);
	if (c < 0 || st < 0 || parse_values(l + used, p->v[c][st], GC_SESS_ROUNDS))
		return -EINVAL;
	seen[c][st] = p->have[c] = true;
	return 0;
}

int gc_sess_parse(const char *text, struct gc_sess_point *p, double *quantum)
{
	bool seen[GC_SESS_NCASES][GC_SESS_NSTAT] = { { false } }, have_q = false;
	char line[512];

	memset(p, 0, sizeof(*p));
	*quantum = 0;
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);

		if (len < sizeof(line)) {
			memcpy(line, text, len);
			line[len] = '\0';
			if (parse_sess_line(line, p, quantum, seen, &have_q) < 0)
				return -EINVAL;
		}
		text = nl ? nl + 1 : NULL;
	}
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		for (unsigned st = 0; st < GC_SESS_NSTAT; st++)
			if (!seen[c][st])
				return -EINVAL;
	return have_q ? 0 : -EINVAL;
}

bool gc_sess_mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	bool hit = false;

	while (f && !hit && fgets(line, sizeof(line), f))
		hit = strstr(line, name) != NULL;
	if (f)
		fclose(f);
	return hit;
}

bool gc_sess_fresh(void)
{
	const char *v = getenv(GC_SESS_FRESH_ENV);

	return v && *v;
}

/* The three sets of graphs measured after a detach; the stream case goes with the old one. */
enum { SET_OLD, SET_MID, SET_NEW, SESS_NSETS };
static const char *const set_names[SESS_NSETS] = { "old", "mid", "new" };

struct sess_graphs {
	union {
		max_align_t align;
		unsigned char bytes[GC_GAP_GRAPH_BYTES];
	} g[GC_SESS_NCASES];
	bool built[GC_SESS_NCASES];
};

struct sess {
	const struct gc_gap_dev *d;
	const struct gc_sess_ops *ops;
	void *ctx;
	unsigned seq[GC_SESS_MAX];
	size_t n;
	bool part[GC_SESS_NPARTS];
	double quantum, fresh_quantum;
	struct sess_graphs sets[SESS_NSETS];
	struct gc_sess_point pristine, fresh, after[GC_SESS_MAX][SESS_NSETS];
};

/* A graph of every graph case; warm: launched once (its first launch uploads it). */
static void graphs_build(const struct gc_gap_dev *d, struct sess_graphs *set, bool warm)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		const struct gc_shape *sh = gc_shape_get(gc_sess_cases[c].shape);

		if (gc_sess_cases[c].stream)
			continue;
		memset(&set->g[c], 0, sizeof(set->g[c]));
		d->ops->build(d->ctx, sh, &set->g[c]);
		set->built[c] = true;
		if (warm)
			d->ops->run_graph(d->ctx, sh, &set->g[c]);
	}
}

static void graphs_free(const struct gc_gap_dev *d, struct sess_graphs *set)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		if (set->built[c])
			d->ops->destroy(d->ctx, &set->g[c]);
	memset(set->built, 0, sizeof(set->built));
}

/* One round of one case: its statistics, and the smallest clock step its gaps show. */
static void sess_fig(const struct gc_gap_dev *d, const struct gc_shape *sh, void *graph,
		     double fig[GC_SESS_NSTAT], double *quantum)
{
	struct gc_gaps g = { 0 };

	gc_gaps_collect(d, sh, graph, gc_sess_launches(sh), &g, NULL);
	fig[GC_SESS_P50] = gc_stat_median(g.v, g.n);
	fig[GC_SESS_TIME] = gc_stat_median(g.span_us, g.runs) * 1e3;
	gc_assert_f(!isnan(fig[GC_SESS_P50]) && !isnan(fig[GC_SESS_TIME]),
		    "%s: no medians of %zu gaps and %zu runs (out of memory)", sh->name, g.n,
		    g.runs);
	if (quantum) {
		double q = gc_gap_quantum(g.v, g.n);

		*quantum = q > 0 && (*quantum == 0 || q < *quantum) ? q : *quantum;
	}
	gc_gaps_free(&g);
}

/* Kernel dispatches of one round of the graph cases and, with stream, the stream case. */
static uint64_t round_dispatches(bool stream)
{
	uint64_t n = 0;

	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		const struct gc_shape *sh = gc_shape_get(gc_sess_cases[c].shape);

		if (!gc_sess_cases[c].stream || stream)
			n += (uint64_t)gc_sess_launches(sh) * sh->kernels;
	}
	return n;
}

/* Round r of every graph case of set, and with stream the stream case, into p. */
static void sess_round(const struct gc_gap_dev *d, struct sess_graphs *set, bool stream,
		       unsigned r, struct gc_sess_point *p, double *quantum)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		const struct gc_sess_case *k = &gc_sess_cases[c];
		double fig[GC_SESS_NSTAT];

		if (k->stream && !stream)
			continue;
		sess_fig(d, gc_shape_get(k->shape), k->stream ? NULL : &set->g[c], fig, quantum);
		for (unsigned st = 0; st < GC_SESS_NSTAT; st++)
			p->v[c][st][r] = fig[st];
		p->have[c] = true;
	}
}

/* How pristine and fresh are measured: graphs built and warmed, a round discarded, the rounds. */
static void sess_reference(const struct gc_gap_dev *d, struct sess_graphs *set,
			   struct gc_sess_point *p, double *quantum)
{
	struct gc_sess_point warm;

	memset(&warm, 0, sizeof(warm));
	graphs_build(d, set, true);
	sess_round(d, set, true, 0, &warm, NULL);
	for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
		sess_round(d, set, true, r, p, quantum);
}

void gc_sess_fresh_report(const struct gc_gap_dev *d, const char *lib)
{
	struct sess_graphs set;
	struct gc_sess_point p;
	double q = 0;

	memset(&set, 0, sizeof(set));
	memset(&p, 0, sizeof(p));
	gc_assert_f(!gc_sess_mapped(lib), "the fresh process has %s mapped: it must never have "
		    "loaded the profiler", lib);
	sess_reference(d, &set, &p, &q);
	graphs_free(d, &set);
	gc_sess_print(stdout, &p, q);
}

static double med(const double *v)
{
	return gc_stat_median(v, GC_SESS_ROUNDS);
}

static void sess_label(const struct sess *s, unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "session%u-%s", i + 1, s->ops->modes[s->seq[i]]);
}

/* The modes of sessions 1 .. i + 1: "concurrent > serialized". */
static void sess_orderstr(const struct sess *s, unsigned i, char *buf, size_t len)
{
	int n = 0;

	buf[0] = '\0';
	for (unsigned j = 0; j <= i && n >= 0 && (size_t)n < len; j++)
		n += snprintf(buf + n, len - n, "%s%s", j ? " > " : "", s->ops->modes[s->seq[j]]);
}

_Static_assert(GC_SESS_ROUNDS == 3, "print_reference() prints three rounds");
static void print_reference(const struct sess *s)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		const double *p50 = s->pristine.v[c][GC_SESS_P50];
		const double *t = s->pristine.v[c][GC_SESS_TIME];
		const double *f50 = s->fresh.v[c][GC_SESS_P50], *ft = s->fresh.v[c][GC_SESS_TIME];

		gc_info("  reference %-15s gap-p50 ns: pristine %.0f %.0f %.0f, fresh %.0f %.0f "
			"%.0f | graph-time ns: pristine %.0f %.0f %.0f, fresh %.0f %.0f %.0f",
			gc_sess_cases[c].name, p50[0], p50[1], p50[2], f50[0], f50[1], f50[2], t[0],
			t[1], t[2], ft[0], ft[1], ft[2]);
	}
}

/* The traced workload of one session; returns the kernel dispatches it made. */
static uint64_t sess_workload(struct sess *s, unsigned i)
{
	const struct gc_gap_dev *d = s->d;
	struct gc_sess_point traced[2];
	uint64_t n = 0;
	char label[48];

	memset(traced, 0, sizeof(traced));
	for (unsigned k = 0; k < GC_N_SHAPES && s->part[GC_SESS_STREAM]; k++) { /* stream chains */
		const struct gc_shape *sh = &gc_shapes[k];
		struct gc_gaps g = { 0 };

		if (sh->kind == GC_SHAPE_WIDE || sh->kernels > 256)
			continue;
		gc_gaps_collect(d, sh, NULL, gc_sess_launches(sh), &g, NULL);
		gc_gaps_free(&g);
		n += (uint64_t)gc_sess_launches(sh) * sh->kernels;
	}
	if (s->part[GC_SESS_GRAPHS]) { /* wide and long graphs */
		sess_round(d, &s->sets[SET_OLD], false, 0, &traced[0], NULL);
		n += round_dispatches(false);
	}
	if (s->part[GC_SESS_MID]) { /* graphs instantiated while traced */
		graphs_build(d, &s->sets[SET_MID], false);
		sess_round(d, &s->sets[SET_MID], false, 0, &traced[1], NULL);
		n += round_dispatches(false);
	}
	if (s->part[GC_SESS_DEEP])
		n += s->ops->workload(s->ctx);
	sess_label(s, i, label, sizeof(label));
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		for (unsigned set = 0; set < 2; set++)
			if (traced[set].have[c])
				gc_info("  %s traced %s-%-10s gap-p50 %.0f ns, graph-time %.0f ns "
					"(pristine %.0f, %.0f)", label, set_names[set],
					gc_sess_cases[c].name, traced[set].v[c][GC_SESS_P50][0],
					traced[set].v[c][GC_SESS_TIME][0],
					med(s->pristine.v[c][GC_SESS_P50]),
					med(s->pristine.v[c][GC_SESS_TIME]));
	return n;
}

/* Session i: attach, the traced workload, detach; then every set measured again. */
static void sess_session(struct sess *s, unsigned i)
{
	const struct gc_gap_dev *d = s->d;
	unsigned m = s->seq[i];
	uint64_t stray;
	char label[48];

	sess_label(s, i, label, sizeof(label));
	gc_info("%s: attach", label);
	s->ops->attach(s->ctx, m);
	s->ops->detach(s->ctx, m, sess_workload(s, i));
	graphs_build(d, &s->sets[SET_NEW], true);
	for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
		for (unsigned set = 0; set < SESS_NSETS; set++)
			if (set != SET_MID || s->part[GC_SESS_MID])
				sess_round(d, &s->sets[set], set == SET_OLD, r, &s->after[i][set],
					   NULL);
	stray = s->ops->stray(s->ctx);
	gc_check_f(stray == 0, "%llu profiler records arrived while the cases were measured after "
		   "%s detached: a detached profiler still records", (unsigned long long)stray,
		   label);
	graphs_free(d, &s->sets[SET_MID]);
	graphs_free(d, &s->sets[SET_NEW]);
}

#define FRESH_TIMEOUT_MS 300000u

struct fresh_exec {
	char **argv, **envp;
	int fd;
};

/* In the forked child: become the fresh process, its stdout and stderr into the memfd. */
static void fresh_exec(void *arg)
{
	static const char msg[] = "execve /proc/self/exe failed\n";
	const struct fresh_exec *x = arg;

	if (dup2(x->fd, STDOUT_FILENO) >= 0 && dup2(x->fd, STDERR_FILENO) >= 0)
		execve("/proc/self/exe", x->argv, x->envp);
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(127);
	_exit(127);
}

/* This environment with GC_SESS_FRESH_ENV=1, without the metrics file (built before fork). */
static char **fresh_env(void)
{
	static char fresh[] = GC_SESS_FRESH_ENV "=1";
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	gc_assert(envp);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], GC_SESS_FRESH_ENV "=", sizeof(GC_SESS_FRESH_ENV)) &&
		    strncmp(environ[i], GC_METRICS_ENV "=", sizeof(GC_METRICS_ENV)))
			envp[k++] = environ[i];
	envp[k] = fresh;
	return envp;
}

static char *read_back(int fd)
{
	size_t n = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t r = 1;

	gc_assert(buf);
	gc_assert_f(lseek(fd, 0, SEEK_SET) == 0, "lseek: %s", strerror(errno));
	while (r > 0) {
		if (cap - n < 4096) {
			char *p = realloc(buf, cap *= 2);

			gc_assert(p);
			buf = p;
		}
		r = read(fd, buf + n, cap - n - 1);
		n += r > 0 ? (size_t)r : 0;
	}
	buf[n] = '\0';
	return buf;
}

/* The fresh process: this binary's `subtest` with GC_SESS_FRESH_ENV set, waited for. */
static void sess_fresh_run(struct sess *s, const char *subtest)
{
	char sub[128], run[] = "--run-subtest";
	char *argv[] = { program_invocation_name, run, sub, NULL };
	struct fresh_exec x = { argv, fresh_env(), memfd_create("gc-sess-fresh", 0) };
	struct gc_child_status cs;
	char fate[128], *text;
	int r;

	snprintf(sub, sizeof(sub), "%s", subtest);
	gc_assert_f(x.fd >= 0, "memfd_create: %s", strerror(errno));
	r = gc_fork_run(fresh_exec, &x, FRESH_TIMEOUT_MS, &cs);
	free(x.envp);
	gc_assert_f(r == 0, "fork: %s", strerror(-r));
	text = read_back(x.fd);
	close(x.fd);
	if (cs.fate != GC_CHILD_EXITED || cs.code != 0 ||
	    gc_sess_parse(text, &s->fresh, &s->fresh_quantum)) {
		for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
			gc_info("  fresh process: %s", l);
		gc_fail("the fresh process (%s --run-subtest %s, %s=1) %s%s", argv[0], subtest,
			GC_SESS_FRESH_ENV, gc__child_fate(&cs, fate, sizeof(fate)),
			cs.fate == GC_CHILD_EXITED && cs.code == 0 ? " without a complete report" :
								     "");
	}
	free(text);
}

/* The metric residual.WHEN.STAT.CASE: x over pristine, as the overhead ratios are (1: none). */
static void sess_ratio(const char *when, const char *stat, const char *name, double x,
		       double pristine)
{
	char metric[160];
	double r = x / (pristine > 0 ? pristine : 1);

	snprintf(metric, sizeof(metric), "residual.%s.%s.%s", when, stat, name);
	gc_metric(metric, "x", GC_LOWER_IS_BETTER, &r, 1);
}

/*
 * Session i's residuals in one set: a check, a metric and a line per case;
 * those of the stream case also counted in *stream.
 */
static unsigned sess_judge_set(const struct sess *s, unsigned i, unsigned set, char *carriers,
			       size_t len, unsigned *stream)
{
	const struct gc_sess_point *a = &s->after[i][set];
	char label[48], order[256], name[48];
	unsigned residuals = 0;

	sess_label(s, i, label, sizeof(label));
	sess_orderstr(s, i, order, sizeof(order));
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		struct gc_sess_verdict v[GC_SESS_NSTAT];

		if (!a->have[c])
			continue;
		if (gc_sess_cases[c].stream)
			snprintf(name, sizeof(name), "%s", gc_sess_cases[c].name);
		else
			snprintf(name, sizeof(name), "%s-%s", set_names[set],
				 gc_sess_cases[c].name);
		for (unsigned st = 0; st < GC_SESS_NSTAT; st++) {
			size_t used = strlen(carriers);

			gc_sess_judge(s->pristine.v[c][st], s->fresh.v[c][st], a->v[c][st],
				      GC_SESS_ROUNDS, s->quantum, GC_SESS_K, &v[st]);
			sess_ratio(label, gc_sess_stats[st], name, med(a->v[c][st]),
				   med(s->pristine.v[c][st]));
			gc_check_f(!v[st].residual, "after %s (%s): %s %s +%.0f ns over pristine, "
				   "+%.0f over the fresh process; allowed %.0f", label, order, name,
				   gc_sess_stats[st], v[st].over_pristine, v[st].over_fresh,
				   v[st].allowed);
			if (v[st].residual && used < len)
				snprintf(carriers + used, len - used, " %s:%s(+%.0f ns)", name,
					 gc_sess_stats[st], v[st].over_pristine);
			residuals += v[st].residual;
			*stream += v[st].residual && gc_sess_cases[c].stream;
		}
		gc_info("  %s %-18s gap-p50 %.0f ns (%+.0f over pristine, %+.0f over fresh, "
			"allowed %.0f) | graph-time %.0f ns (%+.0f, %+.0f, allowed %.0f)%s", label,
			name,
			med(a->v[c][GC_SESS_P50]), v[0].over_pristine, v[0].over_fresh,
			v[0].allowed, med(a->v[c][GC_SESS_TIME]), v[1].over_pristine,
			v[1].over_fresh, v[1].allowed,
			v[0].residual || v[1].residual ? "  RESIDUAL" :
			v[0].over_pristine > v[0].allowed || v[1].over_pristine > v[1].allowed ?
							    "  (over pristine only: drift)" :
							    "");
	}
	return residuals;
}

/* Every session's verdicts, the fresh - pristine metrics, and the summary. */
static void sess_judge_all(const struct sess *s)
{
	unsigned per_set[SESS_NSETS] = { 0 }, stream = 0;
	int first = -1;
	char carriers[1024], label[48], order[256];

	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		for (unsigned st = 0; st < GC_SESS_NSTAT; st++)
			sess_ratio("fresh", gc_sess_stats[st], gc_sess_cases[c].name,
				   med(s->fresh.v[c][st]), med(s->pristine.v[c][st]));
	for (unsigned i = 0; i < s->n; i++) {
		unsigned total = 0;

		carriers[0] = '\0';
		for (unsigned set = 0; set < SESS_NSETS; set++) {
			unsigned r = sess_judge_set(s, i, set, carriers, sizeof(carriers), &stream);

			per_set[set] += r;
			total += r;
		}
		sess_label(s, i, label, sizeof(label));
		sess_orderstr(s, i, order, sizeof(order));
		gc_info("after %s (%s): %u residuals%s%s", label, order, total,
			total ? ":" :
				" (every case within quantum + k x spread of both references)",
			carriers);
		first = first < 0 && total ? (int)i : first;
	}
	if (first < 0) {
		gc_info("profiler-sessions: after every one of %zu sessions, every case costs what "
			"it cost before the first attach (quantum %.0f ns, k %.0f)", s->n,
			s->quantum, GC_SESS_K);
		return;
	}
	sess_label(s, (unsigned)first, label, sizeof(label));
	sess_orderstr(s, (unsigned)first, order, sizeof(order));
	gc_info("profiler-sessions: the first residual appeared after %s (%s); residuals carried "
		"by graphs instantiated before the first session %u (of them stream-chain16 %u), "
		"during a session %u, after its detach %u", label, order, per_set[SET_OLD], stream,
		per_set[SET_MID], per_set[SET_NEW]);
}

/* The modes and parts: all of them, or what GC_SESS_MODES_ENV / GC_SESS_PARTS_ENV name. */
static void sess_setup(struct sess *s)
{
	const char *modes = getenv(GC_SESS_MODES_ENV), *parts = getenv(GC_SESS_PARTS_ENV);
	unsigned fwd[GC_SESS_MAX / 2], pick[GC_SESS_NPARTS];
	int n = (int)s->ops->nmodes, np = GC_SESS_NPARTS;
	char order[256], what[128] = "";

	gc_assert_f(s->ops->nmodes >= 1 && s->ops->nmodes <= ARRAY_SIZE(fwd), "%u modes: 1 to %zu",
		    s->ops->nmodes, ARRAY_SIZE(fwd));
	for (unsigned i = 0; i < ARRAY_SIZE(fwd); i++)
		fwd[i] = i;
	for (unsigned i = 0; i < GC_SESS_NPARTS; i++)
		pick[i] = i;
	if (modes && *modes)
		n = gc_sess_pick(modes, s->ops->modes, s->ops->nmodes, fwd, ARRAY_SIZE(fwd));
	gc_assert_f(n > 0, "%s=%s: not a list of this profiler's modes (%s%s)", GC_SESS_MODES_ENV,
		    modes, s->ops->modes[0], s->ops->nmodes > 1 ? ", ..." : "");
	if (parts && *parts)
		np = gc_sess_pick(parts, gc_sess_parts, GC_SESS_NPARTS, pick, GC_SESS_NPARTS);
	gc_assert_f(np > 0, "%s=%s: not a list of stream, graphs, mid, deep", GC_SESS_PARTS_ENV,
		    parts);
	for (int i = 0; i < np; i++) {
		s->part[pick[i]] = true;
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", i ? ", " : "",
			 gc_sess_parts[pick[i]]);
	}
	s->n = gc_sess_order(fwd, (unsigned)n, s->seq, GC_SESS_MAX);
	sess_orderstr(s, (unsigned)s->n - 1, order, sizeof(order));
	gc_info("sessions: %s; each runs, attached: %s%s", order, what,
		(modes && *modes) || (parts && *parts) ? " (narrowed by the environment)" : "");
}

void gc_sess_run(const struct gc_gap_dev *d, const struct gc_sess_ops *ops, void *ctx,
		 const char *subtest)
{
	struct sess *s;

	if (!ops->pristine && gc_sess_mapped(ops->lib))
		gc_skip("%s is mapped into this process before its first session (an earlier "
			"subtest, or an injected profiler): pristine would not be pristine; run "
			"--run-subtest %s alone (the runner does)", ops->lib, subtest);
	s = calloc(1, sizeof(*s));
	gc_assert(s);
	*s = (struct sess){ .d = d, .ops = ops, .ctx = ctx };
	sess_setup(s);
	gc_info("pristine: %s", ops->pristine ? ops->pristine : "measured before the profiler "
		"library is loaded");
	sess_reference(d, &s->sets[SET_OLD], &s->pristine, &s->quantum);
	for (unsigned i = 0; i < s->n; i++)
		sess_session(s, (unsigned)i);
	sess_fresh_run(s, subtest);
	print_reference(s);
	gc_info("clock quantum: %.0f ns in pristine's gaps, %.0f ns in the fresh process's",
		s->quantum, s->fresh_quantum);
	s->quantum = fmax(fmax(s->quantum, s->fresh_quantum), 1.0);
	sess_judge_all(s);
	graphs_free(d, &s->sets[SET_OLD]);
	free(s);
}

/* ------------------------------------------------------------ bracketing */

static int cmp_bracket(const void *a, const void *b)
{
	const struct gc_bracket_rec *x = a, *y = b;

	return x->stamp_start < y->stamp_start ? -1 : x->stamp_start > y->stamp_start;
}

static int64_t rec_lo(const struct gc_bracket_rec *r)
{
	return (int64_t)r->stamp_end - (int64_t)r->rec_end;
}

static int64_t rec_hi(const struct gc_bracket_rec *r)
{
	return (int64_t)r->stamp_start - (int64_t)r->rec_start;
}

static int bracket_bad(struct gc_bracket *out, size_t k, const char *why)
{
	out->bad = k;
	out->why = why;
	return -EINVAL;
}

int gc_bracket_check(struct gc_bracket_rec *v, size_t n, const struct gc_bracket_rule *rule,
		     struct gc_bracket *out)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX, slack, step;
	size_t len = 0;

	memset(out, 0, sizeof(*out));
	out->tight = INT64_MAX;
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_bracket);
	slack = rule->slack_ns + (int64_t)((v[n - 1].stamp_start - v[0].stamp_start) / 1000000 *
					   rule->ppm);
	for (size_t k = 0; k < n; k++) {
		int64_t l = rec_lo(&v[k]), h = rec_hi(&v[k]);
		int64_t nlo = l > lo ? l : lo, nhi = h < hi ? h : hi;

		if (h - l < -rule->slack_ns)
			return bracket_bad(out, k, "the record is shorter than its dispatch's stamps");
		if (nhi - nlo >= -slack) {
			lo = nlo, hi = nhi, len++;
			continue;
		}
		if (len < rule->min_seg || n - k < rule->min_seg || ++out->steps > rule->max_steps)
			return bracket_bad(out, k, "no clock offset, nor an accepted clock step, "
					   "makes it bracket its stamps like its neighbours");
		step = l > hi ? l - hi : lo - h; /* the distance between the two intervals */
		out->max_step = step > out->max_step ? step : out->max_step;
		out->tight = hi - lo < out->tight ? hi - lo : out->tight;
		out->mid0 = out->steps == 1 ? lo / 2 + hi / 2 : out->mid0;
		lo = l, hi = h, len = 1;
	}
	out->tight = hi - lo < out->tight ? hi - lo : out->tight;
	out->mid0 = out->steps == 0 ? lo / 2 + hi / 2 : out->mid0;
	return 0;
}
