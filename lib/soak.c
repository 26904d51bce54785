// SPDX-License-Identifier: MIT
#include "soak.h"

#include <errno.h>
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "core_private.h"
#include "measure.h"
#include "usage.h"

static const char *const level_names[] = { "quick", "standard", "long" };

int gc_level_parse(const char *text, enum gc_level *level)
{
	if (!text || !*text) {
		*level = GC_LEVEL_STANDARD;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(level_names); i++)
		if (!strcmp(text, level_names[i])) {
			*level = (enum gc_level)i;
			return 0;
		}
	return -EINVAL;
}

const char *gc_level_name(enum gc_level level)
{
	return (size_t)level < ARRAY_SIZE(level_names) ? level_names[level] : "?";
}

/* ------------------------------------------------------------------ fit */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double gc_theil_sen(const double *x, const double *y, size_t n)
{
	double *s, med = NAN;
	size_t m = 0;

	if (n < 2 || !(s = malloc(n * (n - 1) / 2 * sizeof(*s))))
		return NAN;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (x[j] != x[i])
				s[m++] = (y[j] - y[i]) / (x[j] - x[i]);
	if (m) {
		qsort(s, m, sizeof(*s), cmp_double);
		med = m % 2 ? s[m / 2] : (s[m / 2 - 1] + s[m / 2]) / 2;
	}
	free(s);
	return med;
}

/* Over its limit: NaN limits are not used; all used ones exceeded. */
static bool exceeds(const struct gc_soak_fit *f, const struct gc_soak_limit *lim)
{
	bool used = false, over = true;

	if (!isnan(lim->per_cycle))
		used = true, over = over && f->slope > lim->per_cycle;
	if (!isnan(lim->total))
		used = true, over = over && f->growth > lim->total;
	if (!isnan(lim->relative))
		used = true, over = over && !isnan(f->relative) && f->relative > lim->relative;
	return used && over;
}

/* The Theil-Sen line of n window samples: slope, growth across them, relative to their median. */
static void line_fit(const double *x, const double *y, size_t n, struct gc_soak_fit *f)
{
	double med = gc_stat_median(y, n);

	f->from = x[0], f->to = x[n - 1], f->n = n;
	f->slope = gc_theil_sen(x, y, n);
	f->growth = f->slope * (f->to - f->from);
	f->relative = med != 0 ? f->growth / fabs(med) : NAN;
}

/*
 * Grows: beyond lim across the window, and beyond half of lim's total and
 * relative limits (its per-cycle limit whole) in each half of the window:
 * growing with the cycles, not one step (a pool that grew once).
 */
static bool grows(const double *x, const double *y, struct gc_soak_fit *f,
		  const struct gc_soak_limit *lim)
{
	struct gc_soak_limit half = { lim->per_cycle, lim->total / 2, lim->relative / 2 };
	struct gc_soak_fit h[2];
	size_t m = f->n / 2;

	line_fit(x, y, m, &h[0]);
	line_fit(x + m, y + m, f->n - m, &h[1]);
	f->half_slope[0] = h[0].slope, f->half_slope[1] = h[1].slope;
	return exceeds(f, lim) && exceeds(&h[0], &half) && exceeds(&h[1], &half);
}

struct gc_soak_fit gc_soak_fit(const double *x, const double *y, size_t n, double warmup,
			       const struct gc_soak_limit *lim)
{
	struct gc_soak_fit f = { .slope = NAN, .growth = NAN, .relative = NAN,
				 .half_slope = { NAN, NAN }, .verdict = GC_SOAK_FEW_SAMPLES };
	double *wx = malloc((n + 1) * sizeof(*wx)), *wy = malloc((n + 1) * sizeof(*wy));
	double start = n ? warmup * x[n - 1] : 0;
	size_t k = 0;

	for (size_t i = 0; wx && wy && i < n; i++)
		if (x[i] >= start && !isnan(y[i]))
			wx[k] = x[i], wy[k++] = y[i];
	f.n = k;
	if (k)
		f.from = wx[0], f.to = wx[k - 1];
	if (k >= GC_SOAK_MIN_FIT && f.to > f.from) {
		line_fit(wx, wy, k, &f);
		f.verdict = grows(wx, wy, &f, lim) ? GC_SOAK_GROWS : GC_SOAK_OK;
	}
	free(wx);
	free(wy);
	return f;
}

/* ---------------------------------------------------------------- soak */

enum series { S_RSS, S_FDS, S_DEV, S_LAT, N_SERIES };

static const struct series_def {
	const char *name, *unit, *bound;
	struct gc_soak_limit lim;
} series_defs[N_SERIES] = {
	[S_RSS] = { "rss", "KiB", "grows by more than 0.25 KiB a cycle and 4096 KiB in all (half in each half)",
		    { 0.25, 4096, NAN } },
	[S_FDS] = { "fds", "count", "grows by more than 1 fd per 1000 cycles and 4 in all (half in each half)",
		    { 0.001, 4, NAN } },
	[S_DEV] = { "device", "MiB", "grows by more than 4 KiB a cycle and 64 MiB in all (half in each half)",
		    { 4.0 / 1024, 64, NAN } },
	[S_LAT] = { "latency", "us", "per-cycle time grows by more than half its median (a quarter in each half)",
		    { NAN, NAN, 0.5 } },
};

/* What ended the soak: the first reason a claim was refused (none: the caller left the loop). */
enum stop { STOP_CALLER, STOP_CYCLES, STOP_BUDGET, STOP_SECONDS };

static const char *const stop_names[] = {
	[STOP_CALLER] = "caller", [STOP_CYCLES] = "cycles", [STOP_BUDGET] = "budget",
	[STOP_SECONDS] = "seconds",
};

struct sample {
	double t, cycles, v[S_LAT]; /* seconds since start; cycles done; rss, fds, dev */
};

struct gc_soak {
	struct gc_soak_cfg cfg;
	enum gc_level level;
	unsigned long target;  /* cycles, or ULONG_MAX at long */
	uint64_t t0, deadline; /* ns; deadline 0: none */
	uint64_t budget_end;   /* ns; 0: none (cfg.budget_s at quick and standard) */
	atomic_bool over_budget; /* budget_end has passed: raised by gc_soak_done() */
	atomic_int stopped;      /* enum stop */
	atomic_ulong claimed, done;
	_Atomic uint64_t next_ns; /* the next sample is due */
	uint64_t interval_ns;
	pthread_mutex_t lock;
	bool dev_failed;
	size_t n;
	struct sample s[GC_SOAK_MAX_SAMPLES];
};

static enum gc_level env_level(void)
{
	const char *env = getenv(GC_LEVEL_ENV);
	enum gc_level level;

	if (gc_level_parse(env, &level))
		gc_fail("%s=%s: not a level (quick, standard, long)", GC_LEVEL_ENV, env);
	return level;
}

static double env_seconds(void)
{
	const char *env = getenv(GC_SOAK_SECONDS_ENV);
	char *end;
	double v;

	if (!env || !*env) {
		gc_info("level long without %s (the runner gives it): 60 s", GC_SOAK_SECONDS_ENV);
		return 60;
	}
	v = strtod(env, &end);
	if (*end || !(v > 0) || !isfinite(v))
		gc_fail("%s=%s: not a positive number of seconds", GC_SOAK_SECONDS_ENV, env);
	return v;
}

/* The sample of now: called with s->lock held (or before any worker runs). */
static void take_sample(struct gc_soak *s)
{
	struct sample *p;
	struct gc_usage u = gc_usage_now(0);
	long long dev = s->cfg.dev_used ? s->cfg.dev_used(s->cfg.dev_arg) : -ENODEV;

	if (s->n == GC_SOAK_MAX_SAMPLES) { /* keep every other one, sample half as often */
		for (size_t i = 0; i < GC_SOAK_MAX_SAMPLES / 2; i++)
			s->s[i] = s->s[2 * i];
		s->n = GC_SOAK_MAX_SAMPLES / 2;
		s->interval_ns *= 2;
	}
	p = &s->s[s->n++];
	p->t = (double)(gc_now_ns() - s->t0) / 1e9;
	p->cycles = (double)atomic_load(&s->done);
	p->v[S_RSS] = (double)u.rss_kib -
		      (s->cfg.held_bytes ? (double)s->cfg.held_bytes(s->cfg.held_arg) / 1024 : 0);
	p->v[S_FDS] = u.fds >= 0 ? u.fds : NAN;
	p->v[S_DEV] = dev >= 0 ? (double)dev / (1024.0 * 1024.0) : NAN;
	if (s->cfg.dev_used && dev < 0 && !s->dev_failed) {
		s->dev_failed = true;
		gc_warn("soak %s: device memory in use unreadable: %s", s->cfg.name, strerror((int)-dev));
	}
	atomic_store(&s->next_ns, gc_now_ns() + s->interval_ns);
}

/* When cfg.budget_s runs out, in ns; 0: no budget. */
static uint64_t budget_end(const struct gc_soak *s)
{
	return s->cfg.budget_s > 0 ? s->t0 + (uint64_t)(s->cfg.budget_s * 1e9) : 0;
}

static void plan(struct gc_soak *s)
{
	const struct gc_soak_cfg *c = &s->cfg;
	double secs;

	s->level = env_level();
	switch (s->level) {
	case GC_LEVEL_QUICK:
		s->target = c->quick ? c->quick : (c->cycles / 10 ? c->cycles / 10 : 1);
		s->budget_end = budget_end(s);
		break;
	case GC_LEVEL_STANDARD:
		s->target = c->cycles;
		s->budget_end = budget_end(s);
		break;
	case GC_LEVEL_LONG:
		secs = env_seconds();
		s->target = (unsigned long)-1;
		s->deadline = s->t0 + (uint64_t)(secs * 1e9);
		break;
	}
	/* About GC_SOAK_MAX_SAMPLES / 2 samples at long; every 10 ms otherwise. */
	s->interval_ns = s->deadline ? (s->deadline - s->t0) / (GC_SOAK_MAX_SAMPLES / 2)
				     : 10 * 1000 * 1000;
}

/*
 * glibc gives each thread of a busy process an arena of its own (up to 8 a
 * core) and keeps what is freed in it, so memory a library allocated on a
 * thread and freed stays in RSS, once for every thread that did so: a CUDA
 * context created and reset on each of 8 threads in turn grew RSS from 23 to
 * 149 MB on an H200 (by 11.6 MB on each new thread), and from 24 to 33 MB
 * with one arena. A soak's threads then grow RSS with how many of them
 * happened to allocate, not with a leak: the threads started from here on
 * share SOAK_ARENAS arenas. (Giving the memory back instead, malloc_trim at
 * every sample, stalled concurrent-retain's 256 threads enough to change
 * what it tests: ten times slower, and contexts reset under it 66 and 145
 * times where it saw 4.)
 */
#define SOAK_ARENAS 2

static void bound_arenas(void)
{
#ifdef __GLIBC__
	mallopt(M_ARENA_MAX, SOAK_ARENAS);
#endif
}

struct gc_soak *gc_soak_start(const struct gc_soak_cfg *cfg)
{
	struct gc_soak *s;

	gc_assert_f(gc_current_soaks(), "soak %s in subtest %s, which is not in the "
		    "test's .soaks (the runner would not give it its time)", cfg->name,
		    gc_current_subtest() ? gc_current_subtest() : "(none)");
	gc_assert_f(cfg->name && *cfg->name && cfg->cycle && cfg->cycles > 0,
		    "soak %s: needs a name, a cycle and a standard count",
		    cfg->name ? cfg->name : "(null)");
	gc_assert_f(cfg->budget_s >= 0 && isfinite(cfg->budget_s), "soak %s: budget %g s is not "
		    "0 (none) or a number of seconds", cfg->name, cfg->budget_s);
	bound_arenas();
	s = calloc(1, sizeof(*s));
	gc_assert(s);
	s->cfg = *cfg;
	s->t0 = gc_now_ns();
	pthread_mutex_init(&s->lock, NULL);
	plan(s);
	take_sample(s);
	if (s->deadline)
		gc_info("soak %s: level long, %.0f s of cycles: %s", cfg->name,
			(double)(s->deadline - s->t0) / 1e9, cfg->cycle);
	else if (s->budget_end)
		gc_info("soak %s: level %s, %lu cycles or %g s, whichever ends first: %s",
			cfg->name, gc_level_name(s->level), s->target, cfg->budget_s, cfg->cycle);
	else
		gc_info("soak %s: level %s, %lu cycles: %s", cfg->name, gc_level_name(s->level),
			s->target, cfg->cycle);
	return s;
}

/* A claim refused: the first reason is what ended the soak. */
static bool refuse(struct gc_soak *s, enum stop why)
{
	int none = STOP_CALLER;

	if (atomic_load_explicit(&s->stopped, memory_order_relaxed) == STOP_CALLER)
		atomic_compare_exchange_strong(&s->stopped, &none, (int)why);
	return false;
}

/*
 * The budget is a flag here, not a clock read: gc_soak_done() reads the
 * clock on every cycle already (for the sampling) and raises over_budget
 * there, so a claim costs no more than it did without a budget. A cycle
 * claimed between the budget's end and the next done still runs: the soak
 * overruns its budget by at most about one cycle per worker.
 */
bool gc_soak_claim(struct gc_soak *s)
{
	unsigned long k = atomic_fetch_add(&s->claimed, 1);

	if (k >= s->target)
		return refuse(s, STOP_CYCLES);
	if (atomic_load_explicit(&s->over_budget, memory_order_relaxed))
		return refuse(s, STOP_BUDGET);
	if (k == 0 || !s->deadline || gc_now_ns() < s->deadline)
		return true;
	return refuse(s, STOP_SECONDS);
}

void gc_soak_done(struct gc_soak *s)
{
	uint64_t now;

	atomic_fetch_add(&s->done, 1);
	now = gc_now_ns();
	if (s->budget_end && now >= s->budget_end &&
	    !atomic_load_explicit(&s->over_budget, memory_order_relaxed))
		atomic_store_explicit(&s->over_budget, true, memory_order_relaxed);
	if (now < atomic_load(&s->next_ns) || pthread_mutex_trylock(&s->lock))
		return;
	if (gc_now_ns() >= atomic_load(&s->next_ns))
		take_sample(s);
	pthread_mutex_unlock(&s->lock);
}

static const char *stop_name(const struct gc_soak *s)
{
	return stop_names[atomic_load(&((struct gc_soak *)s)->stopped)];
}

unsigned long gc_soak_count(const struct gc_soak *s)
{
	return atomic_load(&((struct gc_soak *)s)->done);
}

/* ----------------------------------------------------------------- end */

struct series_out {
	double x[GC_SOAK_MAX_SAMPLES], y[GC_SOAK_MAX_SAMPLES];
	size_t n;
	struct gc_soak_fit fit;
};

/* Series k's points; the latency is the time per cycle between two samples, in us. */
static void series_points(const struct gc_soak *s, enum series k, struct series_out *o)
{
	o->n = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct sample *p = &s->s[i];

		if (k != S_LAT) {
			o->x[o->n] = p->cycles, o->y[o->n++] = p->v[k];
		} else if (i && p->cycles > s->s[i - 1].cycles) {
			o->x[o->n] = p->cycles;
			o->y[o->n++] = (p->t - s->s[i - 1].t) * 1e6 / (p->cycles - s->s[i - 1].cycles);
		}
	}
}

static void json_number(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.10g", v);
	else
		fputs("null", f);
}

static const char *verdict_name(enum gc_soak_verdict v)
{
	return v == GC_SOAK_OK ? "ok" : v == GC_SOAK_GROWS ? "grows" : "few-samples";
}

static void json_series(FILE *f, enum series k, const struct series_out *o)
{
	const struct gc_soak_fit *fit = &o->fit;

	fprintf(f, "{\"name\":\"%s\",\"unit\":\"%s\",\"x\":[", series_defs[k].name,
		series_defs[k].unit);
	for (size_t i = 0; i < o->n; i++)
		fprintf(f, "%s%.0f", i ? "," : "", o->x[i]);
	fputs("],\"y\":[", f);
	for (size_t i = 0; i < o->n; i++)
		fputs(i ? "," : "", f), json_number(f, o->y[i]);
	fputs("],\"from\":", f);
	json_number(f, fit->from);
	fputs(",\"to\":", f);
	json_number(f, fit->to);
	fputs(",\"slope\":", f);
	json_number(f, fit->slope);
	fputs(",\"growth\":", f);
	json_number(f, fit->growth);
	fputs(",\"relative\":", f);
	json_number(f, fit->relative);
	fputs(",\"bound\":", f);
	gc__json_string(f, series_defs[k].bound);
	fprintf(f, ",\"verdict\":\"%s\"}", verdict_name(fit->verdict));
}

/* How it ended: `stopped`, the level's count (`cycles_asked`, null at long), the budget. */
static void json_stop(FILE *f, const struct gc_soak *s)
{
	fprintf(f, "\"stopped\":\"%s\",\"cycles_asked\":", stop_name(s));
	if (s->deadline)
		fputs("null", f);
	else
		fprintf(f, "%lu", s->target);
	fputs(",\"budget_s\":", f);
	json_number(f, s->budget_end ? s->cfg.budget_s : NAN);
}

struct soak_line {
	const struct gc_soak *s;
	double secs;
	const struct series_out *o;
	const bool *shown;
};

static void json_soak(FILE *f, const void *arg)
{
	const struct soak_line *l = arg;
	const struct gc_soak *s = l->s;
	bool first = true;

	fputs(",\"soak\":", f);
	gc__json_string(f, s->cfg.name);
	fputs(",\"cycle\":", f);
	gc__json_string(f, s->cfg.cycle);
	fprintf(f, ",\"level\":\"%s\",\"cycles\":%lu,\"seconds\":%.3f,",
		gc_level_name(s->level), gc_soak_count(s), l->secs);
	json_stop(f, s);
	fputs(",\"series\":[", f);
	for (int k = 0; k < N_SERIES; k++) {
		if (!l->shown[k])
			continue;
		fputs(first ? "" : ",", f);
		json_series(f, (enum series)k, &l->o[k]);
		first = false;
	}
	fputs("]}\n", f);
}

static void record(const struct gc_soak *s, double secs, const struct series_out *o,
		   const bool *shown)
{
	const char *path = getenv(GC_METRICS_ENV);
	int r;

	if (!path || !*path)
		return;
	r = gc__metrics_line(path, json_soak, &(struct soak_line){ s, secs, o, shown });
	gc_assert_f(!r, "soak %s: cannot append to %s=%s: %s", s->cfg.name, GC_METRICS_ENV, path,
		    strerror(-r));
}

static void judge(const struct gc_soak *s, enum series k, const struct series_out *o)
{
	const struct gc_soak_fit *fit = &o->fit;
	const struct series_def *d = &series_defs[k];

	if (fit->verdict == GC_SOAK_FEW_SAMPLES) {
		gc_info("soak %s: %s: %zu samples after the warm-up, too few for a slope",
			s->cfg.name, d->name, fit->n);
		return;
	}
	gc_info("soak %s: %s %+.4g %s/cycle over cycles %.0f..%.0f (%+.4g %s, %+.1f%%; halves "
		"%+.4g, %+.4g): %s", s->cfg.name, d->name, fit->slope, d->unit, fit->from, fit->to,
		fit->growth, d->unit, fit->relative * 100, fit->half_slope[0], fit->half_slope[1],
		verdict_name(fit->verdict));
	gc_check_f(fit->verdict != GC_SOAK_GROWS, "soak %s: %s %s: %+.4g %s/cycle, %+.4g %s "
		   "over cycles %.0f..%.0f", s->cfg.name, d->name, d->bound, fit->slope, d->unit,
		   fit->growth, d->unit, fit->from, fit->to);
}

void gc_soak_end(struct gc_soak *s)
{
	struct series_out *o = calloc(N_SERIES, sizeof(*o)); /* 16 KiB each: off the stack */
	bool shown[N_SERIES];
	double secs;

	gc_assert(o);
	pthread_mutex_lock(&s->lock);
	take_sample(s);
	pthread_mutex_unlock(&s->lock);
	secs = s->s[s->n - 1].t;
	gc_info("soak %s: %lu cycles in %.1f s, %zu samples", s->cfg.name, gc_soak_count(s),
		secs, s->n);
	if (atomic_load(&s->stopped) == STOP_BUDGET)
		gc_info("soak %s: stopped by its budget of %g s after %lu of the level's %lu "
			"cycles; the verdicts below are of those", s->cfg.name, s->cfg.budget_s,
			gc_soak_count(s), s->target);
	for (int k = 0; k < N_SERIES; k++) {
		shown[k] = k != S_DEV || (s->cfg.dev_used && !s->dev_failed);
		series_points(s, (enum series)k, &o[k]);
		o[k].fit = gc_soak_fit(o[k].x, o[k].y, o[k].n, 0.25, &series_defs[k].lim);
		if (shown[k])
			judge(s, (enum series)k, &o[k]);
	}
	record(s, secs, o, shown);
	free(o);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
