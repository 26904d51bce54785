// SPDX-License-Identifier: MIT
/* The bubbles binaries' tracing contract over a vendor's profiler: trace.h. */
#include "contract/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"

/* A vendor's graph, as lib/gaps.c keeps one (GC_GAP_GRAPH_BYTES). */
union trace_graph {
	max_align_t align;
	unsigned char bytes[GC_GAP_GRAPH_BYTES];
};

/*
 * One shape of traced-*: untraced, then traced with its stamps kept, the
 * records of every traced dispatch taken and checked, the ratios.
 */
static void traced_case(void *arg, const struct gc_shape *sh)
{
	const struct gc_trace_run *run = arg;
	const struct gc_trace_ops *o = run->ops;
	const struct gc_gap_dev *d = run->dev;
	uint64_t *keep = malloc((size_t)GC_TRACE_LAUNCHES * 2 * sh->kernels * 8);
	struct gc_gap_stats plain, traced;
	union trace_graph gr;

	gc_assert(keep);
	memset(&gr, 0, sizeof(gr));
	if (o->begin)
		o->begin(run->ctx, sh);
	d->ops->build(d->ctx, sh, &gr);
	if (o->built)
		o->built(run->ctx, sh, &gr);
	plain = gc_gaps_measure(d, sh, &gr, GC_TRACE_LAUNCHES, "graph", NULL);
	o->drain(run->ctx);
	o->enable(run->ctx, true);
	traced = gc_gaps_measure(d, sh, &gr, GC_TRACE_LAUNCHES, run->mode, keep);
	o->enable(run->ctx, false);
	o->take(run->ctx, sh, (size_t)GC_TRACE_LAUNCHES * sh->kernels);
	if (o->ratios_first)
		gc_gap_ratios(run->ratio, sh->name, &traced, &plain, true);
	o->check(run->ctx, sh, keep, GC_TRACE_LAUNCHES);
	if (!o->ratios_first)
		gc_gap_ratios(run->ratio, sh->name, &traced, &plain, true);
	o->end(run->ctx);
	free(keep);
	d->ops->destroy(d->ctx, &gr);
}

void gc_trace_shapes(const struct gc_trace_run *run)
{
	gc_each_shape(traced_case, (void *)run); /* every shape, by its name */
}

/* The measured launches: 400, taken every 50; what grew, into series (when kept). */
static size_t leak_launches(const struct gc_trace_ops *o, void *ctx, const struct gc_gap_dev *d,
			    const struct gc_shape *sh, void *gr, const struct gc_usage *u0,
			    char *series, size_t len)
{
	size_t records = 0;
	int n = 0;

	for (int i = 0; i < 400; i++) {
		struct gc_trace_count t;

		d->ops->run_graph(d->ctx, sh, gr);
		if (i % 50 != 49)
			continue;
		t = o->count(ctx, 50 * 256, i == 49);
		records += t.n;
		gc_assert_f(t.dropped == 0, "%llu records dropped", (unsigned long long)t.dropped);
		if (o->leak_series)
			n += snprintf(series + n, len - n, " %ld",
				      o->usage(ctx).rss_kib - u0->rss_kib);
	}
	return records;
}

void gc_trace_leak(const struct gc_trace_ops *o, void *ctx, const struct gc_gap_dev *d)
{
	const struct gc_shape *sh = gc_shape_get("chain256");
	struct gc_usage u0, u1;
	union trace_graph gr;
	char series[256] = "";
	size_t records;

	memset(&gr, 0, sizeof(gr));
	d->ops->build(d->ctx, sh, &gr);
	o->enable(ctx, true);
	for (int i = 0; i < 4; i++)
		d->ops->run_graph(d->ctx, sh, &gr);
	o->count(ctx, 4 * 256, false);
	u0 = o->usage(ctx);
	records = leak_launches(o, ctx, d, sh, &gr, &u0, series, sizeof(series));
	u1 = o->usage(ctx);
	o->enable(ctx, false);
	gc_info("102,400 traced dispatches: %zu records; RSS %ld -> %ld KiB%s%s%s, device free %zu "
		"-> %zu, fds %d -> %d", records, u0.rss_kib, u1.rss_kib,
		o->leak_series ? " (growth after each 12,800 dispatches, KiB:" : "", series,
		o->leak_series ? ")" : "", u0.dev_free, u1.dev_free, u0.fds, u1.fds);
	gc_assert_cmpuint(records, ==, 400 * 256);
	gc_usage_expect_back(&u0, &u1, GC_TRACE_LEAK_RSS_KIB, GC_TRACE_LEAK_DEV_BYTES);
	d->ops->destroy(d->ctx, &gr);
}

/* Room for one more window. */
static uint64_t *window_next(struct gc_trace_windows *w, unsigned long cycles)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 2 * cycles;
		w->w = realloc(w->w, w->cap * w->width * sizeof(*w->w));
		gc_assert(w->w);
	}
	return gc_trace_window(w, w->n++);
}

void gc_trace_cycles(const struct gc_soak_cfg *cfg, struct gc_trace_windows *w,
		     void (*cycle)(void *ctx, uint64_t *stamps), void *ctx)
{
	struct gc_soak *s = gc_soak_start(cfg);

	while (gc_soak_claim(s)) {
		cycle(ctx, window_next(w, cfg->cycles));
		gc_soak_done(s);
	}
	gc_soak_end(s);
}

void gc_trace_attach_detach(const struct gc_gap_dev *d, const struct gc_shape *sh, void *graph,
			    const struct gc_trace_attach *a)
{
	struct gc_gap_stats before, after;
	pthread_t th;

	before = gc_gaps_measure(d, sh, graph, GC_TRACE_LAUNCHES, "graph", NULL);
	if (a->start)
		a->start(a->ctx);
	gc_assert(pthread_create(&th, NULL, a->launcher, a->arg) == 0);
	gc_trace_cycles(&a->soak, a->w, a->cycle, a->ctx);
	gc_trace_join(th, a->stop, a->watchdog_s);
	a->records(a->ctx, &before);
	after = gc_gaps_measure(d, sh, graph, GC_TRACE_LAUNCHES, "graph-detached", NULL);
	gc_gap_ratios("detached", sh->name, &after, &before, false);
	if (a->verdict)
		a->verdict(a->ctx);
}

void gc_trace_join(pthread_t th, int *stop, int watchdog_s)
{
	struct timespec dl;

	__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += watchdog_s;
	gc_assert_f(pthread_timedjoin_np(th, NULL, &dl) == 0,
		    "hang: the launcher did not stop within %d s of the last detach", watchdog_s);
}
