/* SPDX-License-Identifier: MIT */
#include "prof_sessions.h"

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
#include "soak.h"

const char *const gc_sess_stats[GC_SESS_NSTAT] = { "gap-p50", "graph-time" };

const struct gc_sess_case gc_sess_cases[GC_SESS_NCASES] = {
	{ "chain16", "chain16", false },     { "chain256", "chain256", false },
	{ "chain8192", "chain8192", false }, { "wide16", "wide16", false },
	{ "wide256", "wide256", false },     { "mixed", "mixed", false },
	{ "stream-chain16", "chain16", true },
};

const char *const gc_sess_sets[GC_SESS_NSETS] = { "old", "mid", "new" };

const char *const gc_sess_parts[GC_SESS_NPARTS] = { "stream", "graphs", "mid", "deep" };

unsigned gc_sess_launches(const struct gc_shape *sh)
{
	return sh->kernels >= 4096 ? GC_SESS_LAUNCHES_LONG : GC_SESS_LAUNCHES;
}

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

/* ------------------------------------------------------------ plans */

/* The plan of configuration c whose sessions take modes first, first + 1, ... (n of them). */
static void plan_of(const struct gc_sess_ops *ops, unsigned c, unsigned first, size_t n,
		    struct gc_sess_plan *p)
{
	size_t len;

	memset(p, 0, sizeof(*p));
	p->config = c;
	p->n = n;
	len = (size_t)snprintf(p->name, sizeof(p->name), "%s%s", ops->configs[c].name,
			       ops->configs[c].modal && ops->nmodes >= 2 ? "-" : "");
	for (size_t i = 0; i < n; i++) {
		p->seq[i] = ops->configs[c].modal ? (first + (unsigned)i) % ops->nmodes : 0;
		if (ops->configs[c].modal && ops->nmodes >= 2 && len + 1 < sizeof(p->name)) {
			p->name[len++] = ops->modes[p->seq[i]][0];
			p->name[len] = '\0';
		}
	}
}

size_t gc_sess_plans(const struct gc_sess_ops *ops, struct gc_sess_plan *v, size_t max)
{
	size_t k = 0;

	for (unsigned c = 0; c < ops->nconfigs; c++) {
		bool orders = ops->configs[c].modal && ops->nmodes >= 2;
		unsigned nplans = orders ? ops->nmodes : 1;

		for (unsigned r = 0; r < nplans; r++, k++)
			if (k < max)
				plan_of(ops, c, r, orders ? ops->nmodes : 2, &v[k]);
	}
	return k;
}

/* Whether the plans finalize the profiler: it has a finalize and GC_SESS_FINALIZE_ENV asks. */
static bool finalize_on(const struct gc_sess_ops *ops)
{
	const char *v = getenv(GC_SESS_FINALIZE_ENV);

	return ops->finalize && v && *v;
}

int gc_sess_plan_named(const struct gc_sess_ops *ops, const char *name, struct gc_sess_plan *out)
{
	struct gc_sess_plan v[GC_SESS_MAX_PLANS];
	size_t n = gc_sess_plans(ops, v, GC_SESS_MAX_PLANS);

	for (size_t i = 0; name && i < n && i < GC_SESS_MAX_PLANS; i++)
		if (!strcmp(v[i].name, name)) {
			*out = v[i];
			return 0;
		}
	return -ENOENT;
}

const char *gc_sess_plan_env(void)
{
	const char *v = getenv(GC_SESS_PLAN_ENV);

	return v && *v ? v : NULL;
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

/* ------------------------------------------------------------ the report */

#define SESS_TAG "gc-sess"

static void print_point(FILE *f, const char *point, const struct gc_sess_point *p)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		for (unsigned st = 0; st < GC_SESS_NSTAT && p->have[c]; st++) {
			fprintf(f, SESS_TAG " %s %s %s", point, gc_sess_cases[c].name,
				gc_sess_stats[st]);
			for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
				fprintf(f, " %.17g", p->v[c][st][r]);
			fputc('\n', f);
		}
}

void gc_sess_print(FILE *f, const struct gc_sess_report *r)
{
	char point[32];

	fprintf(f, SESS_TAG " quantum %.17g\n", r->quantum);
	fprintf(f, SESS_TAG " sessions %zu\n", r->n);
	print_point(f, "pristine", &r->pristine);
	for (size_t i = 0; i < r->n && i < GC_SESS_MAX; i++)
		for (unsigned set = 0; set < GC_SESS_NSETS; set++) {
			snprintf(point, sizeof(point), "s%zu-%s", i + 1, gc_sess_sets[set]);
			print_point(f, point, &r->after[i][set]);
		}
	fputs(SESS_TAG " end\n", f);
	fflush(f);
	if (r->finalized)
		gc_sess_print_fin(f, r);
}

void gc_sess_print_fin(FILE *f, const struct gc_sess_report *r)
{
	char point[32];

	for (unsigned set = 0; set < GC_SESS_NSETS; set++) {
		snprintf(point, sizeof(point), "fin-%s", gc_sess_sets[set]);
		print_point(f, point, &r->fin[set]);
	}
	fputs(SESS_TAG " finalized\n", f);
	fflush(f);
}

/* `V0 V1 ... V(n-1)` and nothing more into v: 0 or -EINVAL. */
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

/* The point a name stands for (`pristine`, `s2-mid`, `fin-old`), or NULL. */
static struct gc_sess_point *point_of(struct gc_sess_report *r, const char *name)
{
	unsigned i = 0;
	int used = 0;
	char set[8];

	if (!strcmp(name, "pristine"))
		return &r->pristine;
	if (sscanf(name, "fin-%7s%n", set, &used) == 1 && !name[used])
		i = 0;
	else if (sscanf(name, "s%u-%7s%n", &i, set, &used) != 2 || name[used] || i < 1 ||
		 i > GC_SESS_MAX)
		return NULL;
	for (unsigned k = 0; k < GC_SESS_NSETS; k++)
		if (!strcmp(set, gc_sess_sets[k]))
			return i ? &r->after[i - 1][k] : &r->fin[k];
	return NULL;
}

/* Which statistics each point's cases had: bits 1 << stat. */
struct seen {
	unsigned char pristine[GC_SESS_NCASES];
	unsigned char after[GC_SESS_MAX][GC_SESS_NSETS][GC_SESS_NCASES];
	unsigned char fin[GC_SESS_NSETS][GC_SESS_NCASES];
	bool quantum, count, end, finalized;
};

/* The seen-bits of point p of r in s (the same member as p's). */
static unsigned char *seen_of(struct seen *s, struct gc_sess_report *r, struct gc_sess_point *p)
{
	if (p == &r->pristine)
		return s->pristine;
	if (p >= &r->fin[0] && p < &r->fin[GC_SESS_NSETS])
		return s->fin[p - r->fin];
	return s->after[(p - &r->after[0][0]) / GC_SESS_NSETS][(p - &r->after[0][0]) %
							       GC_SESS_NSETS];
}

/* One line: 0, 1 for a line not of the report, -EINVAL. */
static int parse_sess_line(const char *l, struct gc_sess_report *r, struct seen *s)
{
	char point[32], name[64], stat[32];
	struct gc_sess_point *p;
	int used = 0, c, st;

	if (strncmp(l, SESS_TAG " ", sizeof(SESS_TAG)))
		return 1;
	l += sizeof(SESS_TAG);
	if (!strcmp(l, "end") || !strcmp(l, "finalized")) {
		*(l[0] == 'e' ? &s->end : &s->finalized) = true;
		return 0;
	}
	if (sscanf(l, "quantum %n", &used) == 0 && used) {
		s->quantum = true;
		return parse_values(l + used, &r->quantum, 1);
	}
	if (sscanf(l, "sessions %zu %n", &r->n, &used) == 1) {
		s->count = !l[used] && r->n >= 1 && r->n <= GC_SESS_MAX;
		return s->count ? 0 : -EINVAL;
	}
	if (sscanf(l, "%31s %63s %31s %n", point, name, stat, &used) != 3 || !used)
		return -EINVAL;
	p = point_of(r, point);
	c = sess_index(name, false);
	st = sess_index(stat, true);
	if (!p || c < 0 || st < 0 || parse_values(l + used, p->v[c][st], GC_SESS_ROUNDS))
		return -EINVAL;
	p->have[c] = true;
	seen_of(s, r, p)[c] |= (unsigned char)(1u << st);
	return 0;
}

/* Every case of a point has both statistics; the stream case where it is measured (with_stream). */
static bool point_whole(const unsigned char *seen, bool with_stream)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		if ((!gc_sess_cases[c].stream || with_stream) && seen[c] != (1u << GC_SESS_NSTAT) - 1)
			return false;
	return true;
}

static bool point_absent(const unsigned char *seen)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		if (seen[c])
			return false;
	return true;
}

/* The sets after one detach (or the finalize): old with the stream case, new, mid if there. */
static bool sets_whole(unsigned char seen[GC_SESS_NSETS][GC_SESS_NCASES])
{
	return point_whole(seen[GC_SESS_OLD], true) && point_whole(seen[GC_SESS_NEW], false) &&
	       (point_absent(seen[GC_SESS_MID]) || point_whole(seen[GC_SESS_MID], false));
}

int gc_sess_parse(const char *text, struct gc_sess_report *r)
{
	struct seen s;
	char line[512];

	memset(r, 0, sizeof(*r));
	memset(&s, 0, sizeof(s));
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);

		if (len < sizeof(line)) {
			memcpy(line, text, len);
			line[len] = '\0';
			if (parse_sess_line(line, r, &s) < 0)
				return -EINVAL;
		}
		text = nl ? nl + 1 : NULL;
	}
	if (!s.quantum || !s.count || !s.end || !point_whole(s.pristine, true))
		return -EINVAL;
	for (size_t i = 0; i < r->n; i++)
		if (!sets_whole(s.after[i]))
			return -EINVAL;
	r->finalized = s.finalized;
	return !s.finalized || sets_whole(s.fin) ? 0 : -EINVAL;
}

/* ------------------------------------------------------------ measuring */

struct sess_graphs {
	union {
		max_align_t align;
		unsigned char bytes[GC_GAP_GRAPH_BYTES];
	} g[GC_SESS_NCASES];
	bool built[GC_SESS_NCASES];
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

/* How pristine and fresh are measured on built, warm graphs: a round discarded, the rounds. */
static void sess_reference(const struct gc_gap_dev *d, struct sess_graphs *set,
			   struct gc_sess_point *p, double *quantum)
{
	struct gc_sess_point warm;

	memset(&warm, 0, sizeof(warm));
	memset(p, 0, sizeof(*p));
	sess_round(d, set, true, 0, &warm, NULL);
	for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
		sess_round(d, set, true, r, p, quantum);
}

static double med(const double *v)
{
	return gc_stat_median(v, GC_SESS_ROUNDS);
}

/* ------------------------------------------------------------ a plan's process */

struct plan_run {
	const struct gc_gap_dev *d;
	const struct gc_sess_ops *ops;
	void *ctx;
	struct gc_sess_plan plan;
	bool part[GC_SESS_NPARTS];
	struct sess_graphs sets[GC_SESS_NSETS];
	struct gc_sess_report rep;
};

static void plan_label(const struct gc_sess_ops *ops, const struct gc_sess_plan *p, size_t i,
		       char *buf, size_t len)
{
	if (ops->configs[p->config].modal)
		snprintf(buf, len, "session%zu-%s", i + 1, ops->modes[p->seq[i]]);
	else
		snprintf(buf, len, "session%zu", i + 1);
}

/* The traced workload of session i; returns the kernel dispatches it made. */
static uint64_t plan_workload(struct plan_run *x, size_t i)
{
	const struct gc_gap_dev *d = x->d;
	struct gc_sess_point traced[2];
	uint64_t n = 0;
	char label[48];

	memset(traced, 0, sizeof(traced));
	for (unsigned k = 0; k < GC_N_SHAPES && x->part[GC_SESS_STREAM]; k++) { /* stream chains */
		const struct gc_shape *sh = &gc_shapes[k];
		struct gc_gaps g = { 0 };

		if (sh->kind == GC_SHAPE_WIDE || sh->kernels > 256)
			continue;
		gc_gaps_collect(d, sh, NULL, gc_sess_launches(sh), &g, NULL);
		gc_gaps_free(&g);
		n += (uint64_t)gc_sess_launches(sh) * sh->kernels;
	}
	if (x->part[GC_SESS_GRAPHS]) { /* wide and long graphs */
		sess_round(d, &x->sets[GC_SESS_OLD], false, 0, &traced[0], NULL);
		n += round_dispatches(false);
	}
	if (x->part[GC_SESS_MIDGRAPHS]) { /* graphs instantiated while traced */
		graphs_build(d, &x->sets[GC_SESS_MID], false);
		sess_round(d, &x->sets[GC_SESS_MID], false, 0, &traced[1], NULL);
		n += round_dispatches(false);
	}
	if (x->part[GC_SESS_DEEP])
		n += x->ops->workload(x->ctx, x->plan.config);
	plan_label(x->ops, &x->plan, i, label, sizeof(label));
	for (unsigned c = 0; c < GC_SESS_NCASES; c++)
		for (unsigned set = 0; set < 2; set++)
			if (traced[set].have[c])
				gc_info("  %s traced %s-%-10s gap-p50 %.0f ns, graph-time %.0f ns "
					"(pristine %.0f, %.0f)", label, gc_sess_sets[set],
					gc_sess_cases[c].name, traced[set].v[c][GC_SESS_P50][0],
					traced[set].v[c][GC_SESS_TIME][0],
					med(x->rep.pristine.v[c][GC_SESS_P50]),
					med(x->rep.pristine.v[c][GC_SESS_TIME]));
	return n;
}

/*
 * Every set measured again, GC_SESS_ROUNDS rounds, into to: after a detach
 * (the mid set too, built while traced) or after the finalize (no mid set).
 */
static void plan_measure(struct plan_run *x, struct gc_sess_point to[GC_SESS_NSETS])
{
	graphs_build(x->d, &x->sets[GC_SESS_NEW], true);
	for (unsigned r = 0; r < GC_SESS_ROUNDS; r++)
		for (unsigned set = 0; set < GC_SESS_NSETS; set++)
			if (set != GC_SESS_MID || x->sets[GC_SESS_MID].built[0])
				sess_round(x->d, &x->sets[set], set == GC_SESS_OLD, r, &to[set],
					   NULL);
	graphs_free(x->d, &x->sets[GC_SESS_NEW]);
}

/* Session i: attach, the traced workload, detach; then every set measured again. */
static void plan_session(struct plan_run *x, size_t i)
{
	unsigned m = x->plan.seq[i];
	uint64_t stray;
	char label[48];

	plan_label(x->ops, &x->plan, i, label, sizeof(label));
	gc_info("%s: attach (%s)", label, x->ops->configs[x->plan.config].what);
	x->ops->attach(x->ctx, m, x->plan.config);
	x->ops->detach(x->ctx, m, x->plan.config, plan_workload(x, i));
	plan_measure(x, x->rep.after[i]);
	stray = x->ops->stray(x->ctx);
	gc_check_f(stray == 0, "%llu profiler records arrived while the cases were measured after "
		   "%s detached: a detached profiler still records", (unsigned long long)stray,
		   label);
	graphs_free(x->d, &x->sets[GC_SESS_MID]);
}

/* The parts of the workload: all of them, or what GC_SESS_PARTS_ENV names. */
static void plan_parts(struct plan_run *x)
{
	const char *parts = getenv(GC_SESS_PARTS_ENV);
	unsigned pick[GC_SESS_NPARTS];
	int np = GC_SESS_NPARTS;
	char what[128] = "";

	for (unsigned i = 0; i < GC_SESS_NPARTS; i++)
		pick[i] = i;
	if (parts && *parts)
		np = gc_sess_pick(parts, gc_sess_parts, GC_SESS_NPARTS, pick, GC_SESS_NPARTS);
	gc_assert_f(np > 0, "%s=%s: not a list of stream, graphs, mid, deep", GC_SESS_PARTS_ENV,
		    parts);
	for (int i = 0; i < np; i++) {
		x->part[pick[i]] = true;
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s", i ? ", " : "",
			 gc_sess_parts[pick[i]]);
	}
	gc_info("plan %s: %zu sessions of %s; each runs, attached: %s%s", x->plan.name,
		x->plan.n, x->ops->configs[x->plan.config].what, what,
		parts && *parts ? " (narrowed by the environment)" : "");
}

/* The plan named name, or a failure listing them. */
static void plan_find(const struct gc_sess_ops *ops, const char *name, struct gc_sess_plan *out)
{
	struct gc_sess_plan first;
	size_t n = gc_sess_plans(ops, &first, 1);

	gc_assert_f(n >= 1 && n <= GC_SESS_MAX_PLANS, "%zu plans: 1 to %d", n, GC_SESS_MAX_PLANS);
	if (gc_sess_plan_named(ops, name, out))
		gc_fail("%s=%s: no such plan (the first is %s)", GC_SESS_PLAN_ENV, name, first.name);
}

/* In the plan's own process: pristine, the sessions, the finalize, the report on stdout. */
static void plan_process(const struct gc_gap_dev *d, const struct gc_sess_ops *ops, void *ctx,
			 const char *name)
{
	struct plan_run *x = calloc(1, sizeof(*x));

	gc_assert(x);
	x->d = d, x->ops = ops, x->ctx = ctx;
	plan_find(ops, name, &x->plan);
	plan_parts(x);
	if (ops->prepare)
		ops->prepare(ctx, x->plan.config);
	gc_assert_f(ops->pristine || !gc_sess_mapped(ops->lib), "%s is mapped into the plan's "
		    "process before its first session: pristine would not be pristine", ops->lib);
	gc_info("pristine: %s", ops->pristine ? ops->pristine : "measured before the profiler "
		"library is loaded");
	graphs_build(d, &x->sets[GC_SESS_OLD], true);
	sess_reference(d, &x->sets[GC_SESS_OLD], &x->rep.pristine, &x->rep.quantum);
	x->rep.n = x->plan.n;
	for (size_t i = 0; i < x->plan.n; i++)
		plan_session(x, i);
	gc_sess_print(stdout, &x->rep);
	if (finalize_on(ops)) {
		ops->finalize(ctx);
		gc_info("%s: the profiler finalized (detached from the process whole)",
			ops->finalize_what);
		plan_measure(x, x->rep.fin);
		x->rep.finalized = true;
		gc_sess_print_fin(stdout, &x->rep);
	}
	graphs_free(d, &x->sets[GC_SESS_OLD]);
	free(x);
}

/* ------------------------------------------------------------ the subtest's process */

#define PLAN_TIMEOUT_MS 300000u

struct plan_exec {
	char **argv, **envp;
	int fd;
};

/* In the forked child: become the plan's process, its stdout and stderr into the memfd. */
static void plan_exec(void *arg)
{
	static const char msg[] = "execve /proc/self/exe failed\n";
	const struct plan_exec *x = arg;

	if (dup2(x->fd, STDOUT_FILENO) >= 0 && dup2(x->fd, STDERR_FILENO) >= 0)
		execve("/proc/self/exe", x->argv, x->envp);
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(127);
	_exit(127);
}

/* This environment with GC_SESS_PLAN_ENV=plan, without the metrics file (built before fork). */
static char **plan_env(char *plan_var)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	gc_assert(envp);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], GC_SESS_PLAN_ENV "=", sizeof(GC_SESS_PLAN_ENV)) &&
		    strncmp(environ[i], GC_METRICS_ENV "=", sizeof(GC_METRICS_ENV)))
			envp[k++] = environ[i];
	envp[k] = plan_var;
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

/* A line of the framework's own framing: the runner reads it wherever it stands in a line. */
static bool framing(const char *l, int n)
{
	static const char *const marks[] = { "gpuconform-Version", "Starting subtest: ",
					     "Subtest ", "Starting dynamic subtest: ",
					     "Dynamic subtest ", "Skip reason: " };

	for (size_t i = 0; i < ARRAY_SIZE(marks); i++)
		if (memmem(l, (size_t)n, marks[i], strlen(marks[i])))
			return true;
	return false;
}

/*
 * The plan's lines, in this subtest's output, behind `| `: what it printed,
 * less its report and the framework's framing (which would read as this
 * process's own results: the runner finds them anywhere in a line).
 */
static void relay(const char *text, char *skip_why, size_t len)
{
	const char *l = text;

	skip_why[0] = '\0';
	while (l && *l) {
		const char *nl = strchr(l, '\n');
		int n = (int)(nl ? nl - l : (ptrdiff_t)strlen(l));

		if (strncmp(l, SESS_TAG " ", sizeof(SESS_TAG)) && !framing(l, n))
			gc_info("  | %.*s", n, l);
		if (!strncmp(l, "Skip reason: ", 13))
			snprintf(skip_why, len, "%.*s", n - 13, l + 13);
		l = nl ? nl + 1 : NULL;
	}
}

/* Run plan p's process; its report into *rep. Its exit status decides the checks' verdict. */
static void plan_spawn(const char *subtest, const struct gc_sess_plan *p,
		       struct gc_sess_report *rep, bool *ok)
{
	char sub[128], run[] = "--run-subtest", var[96], fate[128], why[512], *text;
	char *argv[] = { program_invocation_name, run, sub, NULL };
	struct plan_exec x = { argv, NULL, memfd_create("gc-sess-plan", 0) };
	struct gc_child_status cs;
	int r;

	snprintf(sub, sizeof(sub), "%s", subtest);
	snprintf(var, sizeof(var), GC_SESS_PLAN_ENV "=%s", p->name);
	x.envp = plan_env(var);
	gc_assert_f(x.fd >= 0, "memfd_create: %s", strerror(errno));
	r = gc_fork_run(plan_exec, &x, PLAN_TIMEOUT_MS, &cs);
	free(x.envp);
	gc_assert_f(r == 0, "fork: %s", strerror(-r));
	text = read_back(x.fd);
	close(x.fd);
	relay(text, why, sizeof(why));
	gc__child_fate(&cs, fate, sizeof(fate));
	if (cs.fate == GC_CHILD_EXITED && cs.code == GC_EXIT_SKIP) {
		free(text);
		gc_skip("the plan's process skipped: %s", why[0] ? why : "(it said not why)");
	}
	if (gc_sess_parse(text, rep)) {
		free(text);
		gc_fail("the plan's process (%s --run-subtest %s, %s) %s without a complete report",
			argv[0], subtest, var, fate);
	}
	free(text);
	*ok = cs.fate == GC_CHILD_EXITED && cs.code == 0;
	if (!*ok)
		gc_info("the plan's process %s: its failed checks are above", fate);
}

/* The metric residual.WHEN.STAT.WHAT: x over pristine, as the overhead ratios are (1: none). */
static void sess_ratio(const char *when, const char *stat, const char *what, double r)
{
	char metric[160];

	snprintf(metric, sizeof(metric), "residual.%s.%s.%s", when, stat, what);
	gc_metric(metric, "x", GC_LOWER_IS_BETTER, &r, 1);
}

struct judged {
	const struct gc_sess_report *rep;
	const struct gc_sess_point *fresh;
	double quantum;
};

/* The case's name in a set: SET-SHAPE, or the stream case's own. */
static void case_name(unsigned c, unsigned set, char *buf, size_t len)
{
	if (gc_sess_cases[c].stream)
		snprintf(buf, len, "%s", gc_sess_cases[c].name);
	else
		snprintf(buf, len, "%s-%s", gc_sess_sets[set], gc_sess_cases[c].name);
}

/*
 * The sets after one detach (or the finalize, check false): a line per case,
 * a check per residual (check), the metrics; the residuals' carriers into
 * carriers. Returns how many residuals.
 */
static unsigned judge_point(const struct judged *j, const struct gc_sess_point sets[],
			    const char *label, bool check, char *carriers, size_t len)
{
	double worst[GC_SESS_NSTAT] = { 0, 0 }, stream[GC_SESS_NSTAT] = { 0, 0 };
	unsigned residuals = 0;
	char name[48];

	carriers[0] = '\0';
	for (unsigned set = 0; set < GC_SESS_NSETS; set++)
		for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
			const struct gc_sess_point *a = &sets[set];
			struct gc_sess_verdict v[GC_SESS_NSTAT];

			if (!a->have[c])
				continue;
			case_name(c, set, name, sizeof(name));
			for (unsigned st = 0; st < GC_SESS_NSTAT; st++) {
				const double *pr = j->rep->pristine.v[c][st];
				double ratio = med(a->v[c][st]) / fmax(med(pr), 1);
				size_t used = strlen(carriers);

				gc_sess_judge(pr, j->fresh->v[c][st], a->v[c][st], GC_SESS_ROUNDS,
					      j->quantum, GC_SESS_K, &v[st]);
				if (gc_sess_cases[c].stream)
					stream[st] = ratio;
				else
					worst[st] = fmax(worst[st], ratio);
				if (check)
					gc_check_f(!v[st].residual, "after %s: %s %s +%.0f ns over "
						   "pristine, +%.0f over the fresh process; allowed "
						   "%.0f", label, name, gc_sess_stats[st],
						   v[st].over_pristine, v[st].over_fresh,
						   v[st].allowed);
				if (v[st].residual && used < len)
					snprintf(carriers + used, len - used, " %s:%s(+%.0f ns)",
						 name, gc_sess_stats[st], v[st].over_pristine);
				residuals += v[st].residual;
			}
			gc_info("  %s %-18s gap-p50 %.0f ns (%+.0f over pristine, %+.0f over fresh, "
				"allowed %.0f) | graph-time %.0f ns (%+.0f, %+.0f, allowed %.0f)%s",
				label, name, med(a->v[c][GC_SESS_P50]), v[0].over_pristine,
				v[0].over_fresh, v[0].allowed, med(a->v[c][GC_SESS_TIME]),
				v[1].over_pristine, v[1].over_fresh, v[1].allowed,
				v[0].residual || v[1].residual ? "  RESIDUAL" :
				v[0].over_pristine > v[0].allowed ||
						v[1].over_pristine > v[1].allowed ?
								 "  (over pristine only: drift)" :
								 "");
		}
	for (unsigned st = 0; st < GC_SESS_NSTAT; st++) {
		sess_ratio(label, gc_sess_stats[st], "graphs", worst[st]);
		sess_ratio(label, gc_sess_stats[st], gc_sess_cases[GC_SESS_NCASES - 1].name,
			   stream[st]);
	}
	return residuals;
}

_Static_assert(GC_SESS_ROUNDS == 3, "print_reference() prints three rounds");
static void print_reference(const struct judged *j)
{
	for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
		const double *p50 = j->rep->pristine.v[c][GC_SESS_P50];
		const double *t = j->rep->pristine.v[c][GC_SESS_TIME];
		const double *f50 = j->fresh->v[c][GC_SESS_P50], *ft = j->fresh->v[c][GC_SESS_TIME];

		gc_info("  reference %-15s gap-p50 ns: pristine %.0f %.0f %.0f, fresh %.0f %.0f "
			"%.0f | graph-time ns: pristine %.0f %.0f %.0f, fresh %.0f %.0f %.0f",
			gc_sess_cases[c].name, p50[0], p50[1], p50[2], f50[0], f50[1], f50[2], t[0],
			t[1], t[2], ft[0], ft[1], ft[2]);
	}
}

/* fresh over pristine, as metrics: the graph cases' largest ratio and the stream case's. */
static void fresh_ratios(const struct judged *j)
{
	for (unsigned st = 0; st < GC_SESS_NSTAT; st++) {
		double worst = 0, stream = 0;

		for (unsigned c = 0; c < GC_SESS_NCASES; c++) {
			double r = med(j->fresh->v[c][st]) /
				   fmax(med(j->rep->pristine.v[c][st]), 1);

			if (gc_sess_cases[c].stream)
				stream = r;
			else
				worst = fmax(worst, r);
		}
		sess_ratio("fresh", gc_sess_stats[st], "graphs", worst);
		sess_ratio("fresh", gc_sess_stats[st], gc_sess_cases[GC_SESS_NCASES - 1].name,
			   stream);
	}
}

/* Every session's verdicts, the finalize's report, the plan's summary line. */
static void judge_plan(const struct gc_sess_ops *ops, const struct gc_sess_plan *p,
		       const struct judged *j)
{
	char carriers[1024], label[48], first[48] = "";
	unsigned total = 0;

	print_reference(j);
	fresh_ratios(j);
	for (size_t i = 0; i < j->rep->n; i++) {
		unsigned r;

		plan_label(ops, p, i, label, sizeof(label));
		r = judge_point(j, j->rep->after[i], label, true, carriers, sizeof(carriers));
		gc_info("after %s: %u residuals%s%s", label, r,
			r ? ":" : " (every case within quantum + k x spread of both references)",
			carriers);
		if (r && !first[0])
			snprintf(first, sizeof(first), "%s", label);
		total += r;
	}
	if (j->rep->finalized) {
		unsigned r = judge_point(j, j->rep->fin, "finalized", false, carriers,
					 sizeof(carriers));

		gc_info("after %s (not judged): %u residuals%s%s", ops->finalize_what, r,
			r ? ":" : "", carriers);
		gc_info("%s: %s%s", p->name, total ? "the first residual appeared after " :
			"no residual after any detach", total ? first : "");
		gc_info("%s: %s", p->name, !total ? "finalize changed nothing either" :
			r ? "finalizing the profiler does not restore it either" :
			    "the detach leaves a cost that only finalizing the profiler restores");
	} else {
		gc_info("%s: %s%s; %s", p->name, total ? "the first residual appeared after " :
			"no residual after any detach", total ? first : "",
			finalize_on(ops) ? "the process did not measure again after the finalize" :
			ops->finalize ? "the finalize step is off (" GC_SESS_FINALIZE_ENV "=1 turns it on)" :
					"this profiler has no finalize");
		gc_check_f(!finalize_on(ops), "after %s the plan's process did not measure again (its "
			   "failure is above), where %s", ops->finalize_what,
			   ops->finalize_promise ? ops->finalize_promise : "it should go on");
	}
}

struct subtest_run {
	const struct gc_gap_dev *d;
	const struct gc_sess_ops *ops;
	const char *subtest;
	struct sess_graphs fresh_set;
};

/* One plan, as its dynamic subtest: its process, the fresh reference here, the verdicts. */
static void plan_case(void *arg, const void *vp)
{
	struct subtest_run *s = arg;
	const struct gc_sess_plan *p = vp;
	struct gc_sess_report *rep = calloc(1, sizeof(*rep));
	struct gc_sess_point fresh;
	double fresh_q = 0;
	bool ok = false;

	gc_assert(rep);
	plan_spawn(s->subtest, p, rep, &ok);
	sess_reference(s->d, &s->fresh_set, &fresh, &fresh_q);
	gc_info("clock quantum: %.0f ns in pristine's gaps, %.0f ns in this process's (fresh)",
		rep->quantum, fresh_q);
	judge_plan(s->ops, p, &(struct judged){ rep, &fresh,
						fmax(fmax(rep->quantum, fresh_q), 1.0) });
	gc_check_f(ok, "the plan's process failed: its checks are above");
	free(rep);
}

static const char *plan_name(const void *vp, char *buf, size_t len)
{
	snprintf(buf, len, "%s", ((const struct gc_sess_plan *)vp)->name);
	return buf;
}

/* The plans of this run's level into v (those it leaves out said once); how many. */
static size_t plans_of_level(const struct gc_sess_ops *ops, struct gc_sess_plan *v)
{
	struct gc_sess_plan all[GC_SESS_MAX_PLANS];
	size_t n = gc_sess_plans(ops, all, GC_SESS_MAX_PLANS), k = 0;
	const char *env = getenv(GC_LEVEL_ENV);
	enum gc_level level;
	char out[512] = "";

	gc_assert_f(n <= GC_SESS_MAX_PLANS, "%zu plans: at most %d", n, GC_SESS_MAX_PLANS);
	gc_assert_f(gc_level_parse(env, &level) == 0, "%s=%s: not a level (quick, standard, "
		    "long)", GC_LEVEL_ENV, env);
	for (size_t i = 0; i < n; i++) {
		if (ops->configs[all[i].config].level <= (unsigned)level)
			v[k++] = all[i];
		else
			snprintf(out + strlen(out), sizeof(out) - strlen(out), " %.47s", all[i].name);
	}
	gc_info("profiler-sessions at level %s: %zu of %zu plans%s%s", gc_level_name(level), k, n,
		out[0] ? "; run at a higher level:" : "", out);
	return k;
}

void gc_sess_run(const struct gc_gap_dev *d, const struct gc_sess_ops *ops, void *ctx,
		 const char *subtest)
{
	struct gc_sess_plan plans[GC_SESS_MAX_PLANS];
	struct subtest_run *s;
	size_t n;

	if (gc_sess_plan_env()) {
		plan_process(d, ops, ctx, gc_sess_plan_env());
		return;
	}
	if (gc_sess_mapped(ops->lib))
		gc_skip("%s is mapped into this process, the fresh reference: an earlier subtest, "
			"or an injected profiler; run --run-subtest %s alone (the runner does)",
			ops->lib, subtest);
	n = plans_of_level(ops, plans);
	s = calloc(1, sizeof(*s));
	gc_assert(s);
	*s = (struct subtest_run){ .d = d, .ops = ops, .subtest = subtest };
	graphs_build(d, &s->fresh_set, true);
	gc_each_case(&(const struct gc_cases){ plans, n, sizeof(plans[0]), plan_name, plan_case },
		     s);
	graphs_free(d, &s->fresh_set);
	free(s);
}
