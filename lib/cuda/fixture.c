// SPDX-License-Identifier: MIT
/*
 * What every CUDA binary's fixture is made of: the leak snapshot and check,
 * the leak-checked fixture, and dynamic subtests per device and per pair of
 * devices (lib/core.h's gc_each_device*() over gc_cuda_devices()).
 */
#include "gc_cuda.h"
#include "devfd.h"
#include "leakcheck.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- leak checks */

int gc_cuda_snapshot(const struct gc_cuda *cu, struct gc_cuda_snapshot *s)
{
	CUcontext saved = NULL;

	memset(s, 0, sizeof(*s));
	s->n_devices = cu->n_devices < GC_CUDA_SNAPSHOT_MAX ? cu->n_devices : GC_CUDA_SNAPSHOT_MAX;
	cu->cuCtxGetCurrent(&saved);
	for (int i = 0; i < s->n_devices; i++) {
		size_t total;

		if (gc_cuda_use(cu, i) || cu->cuMemGetInfo(&s->free_mem[i], &total))
			return -EIO;
	}
	cu->cuCtxSetCurrent(saved);
	s->nvidia_fds = gc_devfd_count("/dev/nvidia");
	return s->nvidia_fds < 0 ? s->nvidia_fds : 0;
}

_Static_assert(GC_CUDA_SNAPSHOT_MAX + 1 <= GC_LEAK_MAX_PROBES, "every probe fits one reading");

/* The probes: each device's free memory (slack bytes either way), then /dev/nvidia* fds. */
static void probes(const struct gc_cuda_snapshot *s, uint64_t slack, struct gc_leak_reading *r)
{
	const struct gc_leak_probe mem = { .slack = slack, .say = gc_leak_say_free_mem };

	r->n = 0;
	for (int i = 0; i < s->n_devices; i++)
		gc_leak_add(r, &mem, s->free_mem[i], "device %d", i);
	gc_leak_add(r, &(struct gc_leak_probe){ .say = gc_leak_say_devfds },
		    (uint64_t)s->nvidia_fds, "/dev/nvidia");
}

static void read_probes(const struct gc_leak_set *set, struct gc_leak_reading *r, const char *when)
{
	struct gc_cuda_snapshot now;

	(void)when;
	if (gc_cuda_snapshot(set->ctx, &now))
		gc_fail("leak check: cannot read device memory or /proc/self/fd");
	probes(&now, set->slack, r);
}

void gc_cuda_leak_check(const struct gc_cuda *cu, const struct gc_cuda_snapshot *before,
			size_t slack)
{
	struct gc_leak_set set = { .read = read_probes, .ctx = cu, .slack = slack };

	probes(before, slack, &set.before);
	gc_leak_check(&set);
}

/* ------------------------------------------------------------ fixture */

void *gc_cuda_fixture_new(struct gc_cuda *cu, size_t size, size_t slack)
{
	struct gc_cuda_fixture *dev = calloc(1, size);

	if (!dev) {
		gc_cuda_close(cu);
		gc_fail("calloc(%zu) failed", size);
	}
	dev->cu = cu;
	dev->slack = slack;
	return dev;
}

void gc_cuda_fixture_snapshot(void *data)
{
	struct gc_cuda_fixture *dev = data;

	gc_cu_assert(dev->cu, gc_cuda_use(dev->cu, 0));
	if (gc_cuda_snapshot(dev->cu, &dev->before))
		gc_fail("leak snapshot: cannot read device free memory or /proc/self/fd");
}

void gc_cuda_fixture_check(void *data)
{
	struct gc_cuda_fixture *dev = data;

	for (int i = 0; i < dev->before.n_devices; i++) {
		gc_cu_assert(dev->cu, gc_cuda_use(dev->cu, i));
		gc_cu_assert(dev->cu, dev->cu->cuCtxSynchronize());
	}
	gc_cu_assert(dev->cu, gc_cuda_use(dev->cu, 0));
	gc_cuda_leak_check(dev->cu, &dev->before, dev->slack);
}

void gc_cuda_fixture_free(void *data)
{
	struct gc_cuda_fixture *dev = data;

	gc_cuda_close(dev->cu);
	free(dev);
}

/* ------------------------------------------------- per device, per pair */

struct gc_devices gc_cuda_devices(const struct gc_cuda *cu, int n)
{
	return gc_runtime_devices(cu->devices, cu->n_devices, sizeof(cu->devices[0]), n);
}
