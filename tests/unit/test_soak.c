// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/soak's pure parts: the level's names, the Theil-Sen
 * slope and the fit's window and verdicts; and of a soak's budget, which
 * ends the loop itself (the subtests that soak are in .soaks). The leak
 * verdicts of the loop are checked through tests/selftest/soak.c's
 * subjects (unit_core and the runner's tests).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "measure.h"
#include "soak.h"

static void test_levels(void *fx)
{
	enum gc_level l = GC_LEVEL_LONG;

	(void)fx;
	gc_assert_ok(gc_level_parse(NULL, &l));
	gc_assert_eq_int(l, GC_LEVEL_STANDARD);
	gc_assert_ok(gc_level_parse("quick", &l));
	gc_assert_eq_int(l, GC_LEVEL_QUICK);
	gc_assert_ok(gc_level_parse("long", &l));
	gc_assert_eq_int(l, GC_LEVEL_LONG);
	gc_assert_errno(gc_level_parse("Long", &l), EINVAL);
	gc_assert_errno(gc_level_parse("extended", &l), EINVAL);
	gc_assert_eq_str(gc_level_name(GC_LEVEL_QUICK), "quick");
	gc_assert_eq_str(gc_level_name(GC_LEVEL_STANDARD), "standard");
}

/* A line's slope exactly; one wild point does not move it (a least-squares fit would). */
static void test_theil_sen(void *fx)
{
	double x[20], y[20];

	(void)fx;
	for (int i = 0; i < 20; i++)
		x[i] = i * 10, y[i] = 3 + 0.5 * x[i];
	gc_assert_cmpdouble(fabs(gc_theil_sen(x, y, 20) - 0.5), <, 1e-12);
	y[7] = 1e6;
	gc_assert_cmpdouble(fabs(gc_theil_sen(x, y, 20) - 0.5), <, 0.05);
	gc_assert(isnan(gc_theil_sen(x, y, 1)));
	x[1] = x[0];
	gc_assert(isnan(gc_theil_sen(x, y, 2))); /* no pair with x_i < x_j */
}

static const struct gc_soak_limit rss_like = { 0.25, 4096, NAN };
static const struct gc_soak_limit latency_like = { NAN, NAN, 0.5 };

/*
 * 1 KiB a cycle over 10000 cycles grows; flat with noise does not; a step in
 * the warm-up is left out; growth that stopped in the window's first half is
 * not growth with the cycles.
 */
static void test_fit_verdicts(void *fx)
{
	double x[100], y[100];
	struct gc_soak_fit f;

	(void)fx;
	for (int i = 0; i < 100; i++)
		x[i] = i * 100, y[i] = 50000 + x[i] * 1.0 + (i % 3) * 8;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_GROWS);
	gc_assert_cmpdouble(fabs(f.slope - 1.0), <, 0.01);
	gc_assert_cmpdouble(f.from, ==, 2500);
	gc_assert_cmpdouble(f.to, ==, 9900);
	gc_assert_eq_uint(f.n, 75);

	for (int i = 0; i < 100; i++) /* a 100 MiB step during the warm-up, flat after */
		y[i] = (i < 20 ? 50000 : 150000) + (i % 5) * 4;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
	gc_assert_cmpdouble(fabs(f.slope), <, 0.01);

	for (int i = 0; i < 100; i++) /* 1 KiB a cycle until cycle 7000, flat after: a pool filled */
		y[i] = 50000 + (i < 70 ? i : 70) * 100.0 + (i % 5) * 4;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
	gc_assert_cmpdouble(f.growth, >, 4096); /* over the limits across the window... */
	gc_assert_cmpdouble(f.slope, >, 0.25);
	gc_assert_cmpdouble(fabs(f.half_slope[1]), <, 0.05); /* ...but flat in its second half */

	for (int i = 0; i < 100; i++) /* 0.3 KiB a cycle but 22 KiB in all: under the total */
		x[i] = i, y[i] = 50000 + i * 0.3;
	f = gc_soak_fit(x, y, 100, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
}

static void test_fit_latency(void *fx)
{
	double x[40], y[40];
	struct gc_soak_fit f;

	(void)fx;
	for (int i = 0; i < 40; i++) /* 10 us to 30 us: grows by far more than half */
		x[i] = i * 50, y[i] = 10 + i * 0.5;
	f = gc_soak_fit(x, y, 40, 0.25, &latency_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_GROWS);
	gc_assert_cmpdouble(f.relative, >, 0.5);
	for (int i = 0; i < 40; i++) /* noisy but flat */
		y[i] = 10 + ((i * 7) % 5) * 0.4;
	f = gc_soak_fit(x, y, 40, 0.25, &latency_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
	for (int i = 0; i < 40; i++) /* getting faster is no drift */
		y[i] = 30 - i * 0.5;
	f = gc_soak_fit(x, y, 40, 0.25, &latency_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_OK);
}

/* Fewer than GC_SOAK_MIN_FIT samples in the window, or NaN ones: no verdict. */
static void test_fit_few(void *fx)
{
	double x[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, y[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct gc_soak_fit f;

	(void)fx;
	f = gc_soak_fit(x, y, 8, 0.25, &rss_like); /* window 2..7: 6 samples */
	gc_assert_eq_uint(f.n, 6);
	gc_assert(f.verdict != GC_SOAK_FEW_SAMPLES);
	y[5] = NAN;
	f = gc_soak_fit(x, y, 8, 0.25, &rss_like);
	gc_assert_eq_uint(f.n, 5);
	gc_assert_eq_int(f.verdict, GC_SOAK_FEW_SAMPLES);
	gc_assert(isnan(f.slope));
	f = gc_soak_fit(x, y, 0, 0.25, &rss_like);
	gc_assert_eq_int(f.verdict, GC_SOAK_FEW_SAMPLES);
}

/* ------------------------------------------------------------ budget */

/* About us microseconds of CPU work. */
static void spin_us(double us)
{
	uint64_t end = gc_now_ns() + (uint64_t)(us * 1000);

	while (gc_now_ns() < end)
		;
}

/* A fresh metrics file, named by GC_METRICS_ENV for the soak to append its line to. */
static void metrics_file(char *path, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/unit_soak.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	gc_assert_syscall(fd = mkstemp(path));
	close(fd);
	gc_assert_syscall(setenv(GC_METRICS_ENV, path, 1));
}

/* The file's one line (the soak's), unlinked and the environment restored; free() it. */
static char *soak_line(const char *path)
{
	char *line = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	gc_assert_f(f, "%s: %s", path, strerror(errno));
	gc_assert_f(getline(&line, &cap, f) > 0, "%s: no soak line", path);
	fclose(f);
	unlink(path);
	unsetenv(GC_METRICS_ENV);
	unsetenv(GC_LEVEL_ENV);
	unsetenv(GC_SOAK_SECONDS_ENV);
	return line;
}

/* The number after the JSON member key in line (NaN for null or none). */
static double json_num(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p && strncmp(p + strlen(pat), "null", 4) ? strtod(p + strlen(pat), NULL) : NAN;
}

/* The string value of the JSON member key in line, into buf (empty for none). */
static const char *json_str(const char *line, const char *key, char *buf, size_t len)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(line, pat);
	snprintf(buf, len, "%.*s", p ? (int)strcspn(p + strlen(pat), "\"") : 0,
		 p ? p + strlen(pat) : "");
	return buf;
}

struct budget_case {
	const char *name, *level;
	unsigned long cycles;      /* the level's count (standard's and quick's) */
	double budget_s;
	unsigned long leave_after; /* the loop leaves after this many cycles; 0: never */
	const char *stopped;       /* what the line must say ended it */
};

#define HUGE_COUNT (1ul << 40) /* 20 us cycles: 250 days */

/*
 * The loops leave on their own after 10 s: a budget that does not end a
 * soak then fails its check (`caller`, not `budget`) instead of hanging.
 */
static bool too_long(uint64_t t0)
{
	return gc_now_ns() - t0 > 10ull * 1000 * 1000 * 1000;
}

/*
 * A budget ends a soak of a count it could never finish, at quick and at
 * standard, not before the budget has passed, and the line says so with
 * the count asked; at long the level's seconds rule and the budget is
 * unused; budget 0, or one never reached, runs the count; a loop left by
 * its caller says `caller`.
 */
GC_VARIANTS(struct budget_case, budget_cases, budget_one) = {
	{ "standard-budget-ends-it", "standard", HUGE_COUNT, 0.2, 0, "budget" },
	{ "quick-budget-ends-it", "quick", HUGE_COUNT, 0.05, 0, "budget" },
	{ "budget-0-runs-the-count", "standard", 300, 0, 0, "cycles" },
	{ "budget-not-reached", "standard", 300, 1000, 0, "cycles" },
	{ "long-ignores-the-budget", "long", 300, 0.01, 0, "seconds" },
	{ "caller-leaves", "standard", 300, 0, 10, "caller" },
};

/* The cycles one soak of c runs, its line in *line. */
static unsigned long budget_soak(const struct budget_case *c, char **line)
{
	char path[4096];
	unsigned long n = 0;
	uint64_t t0 = gc_now_ns();
	struct gc_soak *s;

	metrics_file(path, sizeof(path));
	gc_assert_syscall(setenv(GC_LEVEL_ENV, c->level, 1));
	gc_assert_syscall(setenv(GC_SOAK_SECONDS_ENV, "0.2", 1));
	s = gc_soak_start(&(struct gc_soak_cfg){ .name = "budget", .cycle = "20 us of work",
						 .cycles = c->cycles, .quick = c->cycles,
						 .budget_s = c->budget_s });
	while (gc_soak_claim(s)) {
		spin_us(20);
		gc_soak_done(s);
		if (++n == c->leave_after || too_long(t0))
			break;
	}
	gc_soak_end(s);
	*line = soak_line(path);
	return n;
}

static void budget_one(void *ctx, const struct budget_case *c)
{
	bool budget = !strcmp(c->stopped, "budget"), lng = !strcmp(c->level, "long");
	char *line, buf[64];
	unsigned long n = budget_soak(c, &line);

	(void)ctx;
	gc_check_eq_str(json_str(line, "stopped", buf, sizeof(buf)), c->stopped);
	gc_check_cmpdouble(json_num(line, "cycles"), ==, (double)n);
	if (lng)
		gc_check(isnan(json_num(line, "cycles_asked")));
	else
		gc_check_cmpdouble(json_num(line, "cycles_asked"), ==, (double)c->cycles);
	if (c->budget_s > 0 && !lng)
		gc_check_cmpdouble(json_num(line, "budget_s"), ==, c->budget_s);
	else
		gc_check(isnan(json_num(line, "budget_s")));
	if (budget) { /* stopped by the budget: after it, short of the count */
		gc_check_cmpdouble(json_num(line, "seconds"), >=, c->budget_s);
		gc_check_cmpuint(n, <, c->cycles);
	} else if (lng) { /* the level's 0.2 s, well past the budget */
		gc_check_cmpdouble(json_num(line, "seconds"), >=, 0.2);
	} else {
		gc_check_cmpuint(n, ==, c->leave_after ? c->leave_after : c->cycles);
	}
	free(line);
}

static void test_budget(void *fx)
{
	gc_variants(budget_cases, fx);
}

/* The rss series' verdict in a soak line. */
static const char *rss_verdict(const char *line, char *buf, size_t len)
{
	const char *rss = strstr(line, "\"name\":\"rss\"");

	return json_str(rss ? rss : "", "verdict", buf, len);
}

static void *budget_worker(void *arg)
{
	struct gc_soak *s = arg;
	uint64_t t0 = gc_now_ns();

	while (!too_long(t0) && gc_soak_claim(s)) {
		spin_us(20);
		gc_soak_done(s);
	}
	return NULL;
}

/*
 * Workers sharing a soak all stop when the budget ends it (the test would
 * hang otherwise), and the leak verdict is still given on the cycles that
 * ran: enough samples for a fit, not `few-samples`.
 */
static void test_budget_threads(void *fx)
{
	char path[4096], *line, buf[64];
	struct gc_soak *s;
	pthread_t t[4];

	(void)fx;
	metrics_file(path, sizeof(path));
	gc_assert_syscall(setenv(GC_LEVEL_ENV, "standard", 1));
	s = gc_soak_start(&(struct gc_soak_cfg){ .name = "budget-threads", .cycles = HUGE_COUNT,
						 .cycle = "20 us of work, by 4 threads",
						 .budget_s = 0.3 });
	for (int i = 0; i < 4; i++)
		gc_assert_eq_int(pthread_create(&t[i], NULL, budget_worker, s), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	gc_soak_end(s);
	line = soak_line(path);
	gc_check_eq_str(json_str(line, "stopped", buf, sizeof(buf)), "budget");
	gc_check_cmpdouble(json_num(line, "seconds"), >=, 0.3);
	gc_check_eq_str(rss_verdict(line, buf, sizeof(buf)), "ok");
	free(line);
}

static const struct gc_subtest subtests[] = {
	{ "levels", test_levels, "quick, standard (also unset), long; nothing else" },
	{ "theil-sen", test_theil_sen, "a line's slope, robust to an outlier" },
	{ "fit-verdicts", test_fit_verdicts, "a leak grows; a warm-up step and a small total do not" },
	{ "fit-latency", test_fit_latency, "per-cycle time growing by more than half its median" },
	{ "fit-few", test_fit_few, "too few samples give no verdict" },
	{ "budget", test_budget, "a budget ends a soak at quick and standard, saying so; "
	  "not at long" },
	{ "budget-threads", test_budget_threads, "workers sharing a budgeted soak all stop; "
	  "the verdict is of the cycles that ran" },
	{ 0 }
};

static const char *const soaks[] = { "budget", "budget-threads", NULL };

GC_MAIN(.name = "unit_soak", .subtests = subtests, .soaks = soaks)
