// SPDX-License-Identifier: MIT
/*
 * lib/core.h's device iterator over a list of plain records (no device is
 * opened: the names, the order, the pair rules and the printed ids are the
 * subject). Checked line by line by tests/unit/test_core.c; built, but in
 * neither manifest.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>

/* A stack's device record: its N and its own id. */
struct rec {
	long n;
	unsigned id;
};

static const struct rec recs[] = { { 0, 41234 }, { 2, 7 }, { 5, 990 } };

static long rec_index(const void *r, size_t i)
{
	(void)i;
	return ((const struct rec *)r)->n;
}

static long place(const void *r, size_t i)
{
	(void)r;
	return (long)i;
}

static const char *rec_id(const void *r, char *buf, size_t len)
{
	snprintf(buf, len, "id %u", ((const struct rec *)r)->id);
	return buf;
}

static const struct gc_devices list = { recs, 3, sizeof(recs[0]), rec_index, NULL, NULL };

/* The body fails on the device of id 7 only: the others run and pass. */
static void one(void *ctx, const void *r)
{
	(void)ctx;
	gc_assert_f(((const struct rec *)r)->id != 7, "device of id 7 fails on purpose");
	printf("ran id %u\n", ((const struct rec *)r)->id);
}

static void each(void *fx)
{
	const struct gc_devices with_ids = { recs, 3, sizeof(recs[0]), place, rec_id, NULL };

	(void)fx;
	gc_each_device(&with_ids, one, NULL);
}

static void quiet(void *ctx, const void *r)
{
	(void)ctx, (void)r;
}

static void two(void *ctx, const void *a, const void *b)
{
	(void)ctx, (void)a, (void)b;
}

static void pairs(void *fx)
{
	(void)fx;
	gc_each_device_pair(&list, GC_PAIRS_DISTINCT, two, NULL);
	gc_each_device_pair(&list, GC_PAIRS_UNORDERED, two, NULL);
}

static void pairs_all(void *fx)
{
	const struct gc_devices two_ids = { recs, 2, sizeof(recs[0]), rec_index, rec_id, NULL };

	(void)fx;
	gc_each_device_pair(&two_ids, GC_PAIRS_ALL, two, NULL);
}

static const char *const ks[] = { "k1", "k16" };

static const char *k_name(const void *k, char *buf, size_t len)
{
	(void)buf, (void)len;
	return *(const char *const *)k;
}

static void cases(void *fx)
{
	const struct gc_cases kc = { ks, 2, sizeof(ks[0]), k_name, NULL };

	(void)fx;
	gc_each_device_case(&list, &kc, two, NULL);
}

static void kind(void *fx)
{
	const struct gc_devices cpus = { recs, 2, sizeof(recs[0]), rec_index, NULL, "cpu" };

	(void)fx;
	gc_each_device(&cpus, one, NULL);
}

/* Ordinals through $GPUCONFORM_DEVICES; n < 0 or past the list: all of them. */
static void runtime(void *fx)
{
	struct gc_devices d;

	(void)fx;
	setenv(GC_DEVICES_ENV, "3,1", 1);
	d = gc_runtime_devices(recs, 3, sizeof(recs[0]), -1);
	gc_each_device(&d, quiet, NULL);
	d = gc_runtime_devices(recs, 3, sizeof(recs[0]), 1);
	gc_each_device(&d, quiet, NULL);
	d = gc_runtime_devices(recs, 2, sizeof(recs[0]), 5);
	gc_each_device_pair(&d, GC_PAIRS_UNORDERED, two, NULL);
	unsetenv(GC_DEVICES_ENV);
}

static void none(void *fx)
{
	const struct gc_devices empty = { recs, 0, sizeof(recs[0]), rec_index, rec_id, NULL };

	(void)fx;
	gc_each_device(&empty, one, NULL);
	gc_each_device_pair(&empty, GC_PAIRS_ALL, two, NULL);
}

static const struct gc_subtest subtests[] = {
	{ "each", each, "gpu0 gpu1 gpu2 named by place, ids printed: gpu1 fails, the rest pass" },
	{ "pairs", pairs, "distinct then unordered pairs of gpu0 gpu2 gpu5: all pass" },
	{ "pairs-all", pairs_all, "every (a, b) of gpu0 gpu2, both ids printed" },
	{ "cases", cases, "gpu<N>-k1, gpu<N>-k16 per device, a device's cases together" },
	{ "kind", kind, "cpu0 cpu2: cpu2 fails" },
	{ "runtime", runtime, "ordinals 0 1 2 as gpu3 gpu1 gpu2; the first 1; pairs of 2" },
	{ "none", none, "no device: no dynamic subtest runs" },
	{ 0 }
};

GC_MAIN(.name = "selftest_devices", .description = "lib/core's device iterator over plain records",
	.subtests = subtests)
