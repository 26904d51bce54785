// SPDX-License-Identifier: MIT
/*
 * The HIP twins' fixture: the leak snapshot (device free memory, /dev/kfd and
 * /dev/dri descriptors) and check, the leak-checked fixture, and dynamic
 * subtests per device and per pair of devices over hip->devices. See gc_hip.h.
 */
#include "gc_hip.h"
#include "devfd.h"
#include "leakcheck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- leak checks */

int gc_hip_snapshot(const struct gc_hip *hip, struct gc_hip_snapshot *s, hipError_t *err)
{
	size_t total;

	memset(s, 0, sizeof(*s));
	*err = hipSuccess;
	s->n_devices = hip->n_devices < GC_HIP_SNAPSHOT_MAX ? hip->n_devices : GC_HIP_SNAPSHOT_MAX;
	for (int i = 0; i < s->n_devices && *err == hipSuccess; i++) {
		*err = gc_hip_use(hip, i);
		if (*err == hipSuccess)
			*err = hip->hipMemGetInfo(&s->free_mem[i], &total);
	}
	if (*err == hipSuccess)
		*err = gc_hip_use(hip, 0);
	if (*err != hipSuccess)
		return -EIO;
	s->kfd_fds = gc_devfd_count("/dev/kfd");
	s->dri_fds = gc_devfd_count("/dev/dri");
	return s->kfd_fds < 0 ? s->kfd_fds : s->dri_fds < 0 ? s->dri_fds : 0;
}

static void snapshot_or_fail(const struct gc_hip *hip, struct gc_hip_snapshot *s,
			     const char *when)
{
	hipError_t e;
	char err[160];
	int r = gc_hip_snapshot(hip, s, &e);

	if (r == -EIO)
		gc_fail("%s: reading device free memory: %s", when,
			gc_hip_errstr(hip, e, err, sizeof(err)));
	if (r)
		gc_fail("%s: reading /proc/self/fd: %s", when, strerror(-r));
}

static void probes(const struct gc_hip_snapshot *s, uint64_t slack, struct gc_leak_reading *r);

/* A reading of the probes, or the subtest failed naming what could not be read. */
static void read_probes(const struct gc_leak_set *set, struct gc_leak_reading *r, const char *when)
{
	struct gc_hip_snapshot now;

	snapshot_or_fail(set->ctx, &now, when);
	probes(&now, set->slack, r);
}

_Static_assert(GC_HIP_SNAPSHOT_MAX + 2 <= GC_LEAK_MAX_PROBES, "every probe fits one reading");

/*
 * The probes: each device's free memory (slack bytes either way), then the
 * /dev/kfd and /dev/dri fds.
 */
static void probes(const struct gc_hip_snapshot *s, uint64_t slack, struct gc_leak_reading *r)
{
	const struct gc_leak_probe mem = { .slack = slack, .say = gc_leak_say_free_mem };
	const struct gc_leak_probe fds = { .say = gc_leak_say_devfds };

	r->n = 0;
	for (int i = 0; i < s->n_devices; i++)
		gc_leak_add(r, &mem, s->free_mem[i], "gpu%d", i);
	gc_leak_add(r, &fds, (uint64_t)s->kfd_fds, "/dev/kfd");
	gc_leak_add(r, &fds, (uint64_t)s->dri_fds, "/dev/dri");
}

void gc_hip_leak_check(const struct gc_hip *hip, const struct gc_hip_snapshot *before,
		       size_t slack)
{
	struct gc_leak_set set = { .read = read_probes, .ctx = hip, .slack = slack };

	probes(before, slack, &set.before);
	gc_leak_check(&set);
}

/* ------------------------------------------------------------ fixture */

void *gc_hip_fixture_new(struct gc_hip *hip, size_t size, size_t slack)
{
	struct gc_hip_fixture *f = calloc(1, size);

	if (!f) {
		gc_hip_close(hip);
		gc_fail("calloc(%zu) failed", size);
	}
	f->hip = hip;
	f->slack = slack;
	return f;
}

void gc_hip_fixture_snapshot(void *data)
{
	struct gc_hip_fixture *f = data;

	snapshot_or_fail(f->hip, &f->before, "leak snapshot");
}

void gc_hip_fixture_check(void *data)
{
	struct gc_hip_fixture *f = data;

	for (int i = 0; i < f->before.n_devices; i++) {
		gc_hip_assert(f->hip, gc_hip_use(f->hip, i));
		gc_hip_assert(f->hip, f->hip->hipDeviceSynchronize());
	}
	gc_hip_assert(f->hip, gc_hip_use(f->hip, 0));
	gc_hip_leak_check(f->hip, &f->before, f->slack);
}

void gc_hip_fixture_free(void *data)
{
	struct gc_hip_fixture *f = data;

	gc_hip_close(f->hip);
	free(f);
}

/* ------------------------------------------------- per device, per pair */

struct gc_devices gc_hip_devices(const struct gc_hip *hip, int n)
{
	return gc_runtime_devices(hip->devices, hip->n_devices, sizeof(hip->devices[0]), n);
}
