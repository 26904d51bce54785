// SPDX-License-Identifier: MIT
/*
 * rsmi_session: the management-session contract (smi_session.h) on rocm_smi (Debian's
 * librocm-smi 5.2.3 headers; the library linked). The subtests are
 * smi_session.h's; this file says how rocm_smi does each step and what its
 * documentation promises.
 *
 * rocm_smi.h documents rsmi_init as "::RSMI_STATUS_SUCCESS is returned upon
 * successful call." and rsmi_shut_down only as "Do any necessary clean up."
 * (no return value, nothing about a shutdown without an init) [src
 * ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h @ rocm-5.2.3]; rocm_smi_lib's
 * README adds of rsmi_shut_down: "This provides a way to do any
 * releasing of resources that ROCm-SMI may have held." [src ROCm/rocm_smi_lib
 * README.md @ rocm-5.2.3] Neither promises a
 * reference count or thread safety (the status list has
 * RSMI_STATUS_REFCOUNT_OVERFLOW, `An internal reference counter exceeded
 * INT32_MAX`, and RSMI_STATUS_BUSY, `A resource or mutex could not be
 * acquired because it is already being used`, but no function documents
 * either). The library's source does keep a count under a mutex (see
 * fx_setup), and lib.refcounted holds that: nested and concurrent sessions
 * must keep working until the last shutdown.
 *
 * Seen on a machine without an amdgpu device (librocm-smi64 5.2.3):
 * rsmi_init(0) returns RSMI_STATUS_INIT_ERROR after printing `Failed to open
 * drm root directory /sys/class/drm.` on stderr; rsmi_shut_down then
 * returns RSMI_STATUS_INIT_ERROR as well.
 *
 * A device is found again by its rsmi_dev_unique_id_get answer (`Get Unique
 * ID`): rocm_smi has no lookup by id, so a request scans the indices, as a
 * daemon must. Where a device answers RSMI_STATUS_NOT_SUPPORTED, its PCI id
 * (rsmi_dev_pci_id_get: the unique PCI device identifier) stands in, and
 * the setup says so.
 *
 * NOT RUN ON AMD HARDWARE: no AMD GPU was available when this was written.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_amdgpu.h"
#include "gc_rsmi.h"
#include "smi_session.h"

/* ------------------------------------------------------------ the calls */

static ss_status r_init(void *ctx)
{
	(void)ctx;
	return rsmi_init(0);
}

static ss_status r_shutdown(void *ctx)
{
	(void)ctx;
	return rsmi_shut_down();
}

static ss_status r_count(void *ctx, unsigned *n)
{
	uint32_t v = 0;
	rsmi_status_t r = rsmi_num_monitor_devices(&v);

	(void)ctx;
	*n = v;
	return r;
}

/*
 * rocm_smi's handle is the index: "Monitors are referenced by the index which can be
 * between 0 and @p num_devices - 1." [src ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h @
 * rocm-5.2.3]
 */
static ss_status r_handle(void *ctx, unsigned index, uintptr_t *h)
{
	(void)ctx;
	*h = index;
	return RSMI_STATUS_SUCCESS;
}

static ss_status r_id_of(void *ctx, uintptr_t h, char *id, size_t len)
{
	uint64_t v;
	char bdf[48];
	rsmi_status_t r = rsmi_dev_unique_id_get((uint32_t)h, &v);

	(void)ctx;
	if (r == RSMI_STATUS_SUCCESS) {
		snprintf(id, len, "uid:%016" PRIx64, v);
		return r;
	}
	if (r != RSMI_STATUS_NOT_SUPPORTED)
		return r;
	r = rsmi_dev_pci_id_get((uint32_t)h, &v);
	if (r == RSMI_STATUS_SUCCESS)
		snprintf(id, len, "pci:%s", gc_amdgpu_bdf(v, bdf, sizeof(bdf)));
	return r;
}

/*
 * The scan a daemon does: the index whose id is id, else RSMI_STATUS_NOT_FOUND
 * (`An item was searched for but not found`).
 */
static ss_status r_resolve(void *ctx, const char *id, uintptr_t *h)
{
	char got[SS_ID_LEN];
	unsigned n;
	ss_status r = r_count(ctx, &n);

	for (unsigned i = 0; r == RSMI_STATUS_SUCCESS && i < n; i++) {
		r = r_id_of(ctx, i, got, sizeof(got));
		if (r == RSMI_STATUS_SUCCESS && strcmp(got, id) == 0) {
			*h = i;
			return r;
		}
	}
	return r == RSMI_STATUS_SUCCESS ? RSMI_STATUS_NOT_FOUND : r;
}

static void r_query(void *ctx, uintptr_t h, struct ss_answer *a)
{
	uint32_t i = (uint32_t)h, busy;
	uint64_t bdf;
	int64_t temp;

	(void)ctx;
	memset(a, 0, sizeof(*a));
	a->st[SS_Q_NAME] = rsmi_dev_name_get(i, a->name, sizeof(a->name));
	a->st[SS_Q_SERIAL] = rsmi_dev_serial_number_get(i, a->serial, sizeof(a->serial));
	a->st[SS_Q_BUS] = rsmi_dev_pci_id_get(i, &bdf);
	if (a->st[SS_Q_BUS] == RSMI_STATUS_SUCCESS)
		gc_amdgpu_bdf(bdf, a->bus, sizeof(a->bus));
	a->st[SS_Q_MEM] = rsmi_dev_memory_total_get(i, RSMI_MEM_TYPE_VRAM, &a->mem_total);
	a->st[SS_Q_TEMP] = rsmi_dev_temp_metric_get(i, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT,
						    &temp);
	a->st[SS_Q_BUSY] = rsmi_dev_busy_percent_get(i, &busy);
}

static const char *r_strerror(void *ctx, ss_status r, char *buf, size_t len)
{
	(void)ctx;
	return gc_rsmi_strerror((rsmi_status_t)r, buf, len);
}

static const struct ss_ops ops = {
	.init = r_init, .shutdown = r_shutdown, .count = r_count, .handle = r_handle,
	.resolve = r_resolve, .id_of = r_id_of, .query = r_query, .strerror = r_strerror,
};

/* ------------------------------------------------------------ fixture */

/*
 * The count the header does not document, read in the library's source: in
 * rsmi_init, under `std::lock_guard<std::mutex> guard(*smi.bootstrap_mutex());`,
 * `if (smi.ref_count() == INT32_MAX)` returns RSMI_STATUS_REFCOUNT_OVERFLOW,
 * else `smi.ref_count_inc()` and only `if (smi.ref_count() == 1)` does
 * `smi.Initialize(flags)` run (a throw decrements the count again); in
 * rsmi_shut_down, under the same mutex, `if (smi.ref_count() == 0)` returns
 * RSMI_STATUS_INIT_ERROR, else `smi.ref_count_dec()` and only at 0
 * `smi.Cleanup()` [src ROCm/rocm_smi_lib src/rocm_smi.cc @ rocm-5.2.3]. The
 * same two functions at the newest commit read
 * [src ROCm/rocm_smi_lib src/rocm_smi.cc @ a1295714f2f6], and at the tags
 * read between (rocm-3.5.0, 4.0.0, 4.5.2, 5.4.4, 5.7.1, 6.0.0, 6.2.2);
 * rocm-3.3.0 has no count (its rsmi_init calls Initialize every time). So
 * lib.refcounted is true for any library from rocm-3.5.0 on: every init,
 * shutdown and query inside a session is asserted, as for a documented
 * count. rsmi_shut_down also unlocks every device mutex; they are made
 * recursive and robust [src ROCm/rocm_smi_lib
 * third_party/shared_mutex/shared_mutex.cc @ rocm-5.2.3], so glibc
 * refuses (EPERM) to unlock one that a querying thread holds.
 */
static void *fx_setup(void)
{
	struct ss_fx *f = calloc(1, sizeof(*f));

	gc_assert(f);
	f->lib = (struct ss_lib){
		.name = "rocm_smi", .init_call = "rsmi_init(0)", .shutdown_call = "rsmi_shut_down",
		.count_call = "rsmi_num_monitor_devices", .handle_call = "(the index)",
		.resolve_call = "the scan of rsmi_dev_unique_id_get",
		.id_call = "rsmi_dev_unique_id_get",
		.query_call = { "rsmi_dev_name_get", "rsmi_dev_serial_number_get",
				"rsmi_dev_pci_id_get", "rsmi_dev_memory_total_get(VRAM)",
				"rsmi_dev_temp_metric_get(JUNCTION, CURRENT)",
				"rsmi_dev_busy_percent_get" },
		.refcounted = true,
		.count_why = "rocm_smi's source, rocm-3.5.0 on (rocm-5.2.3, a1295714f2f6): "
			     "rsmi_init / rsmi_shut_down count under bootstrap_mutex",
		.ops = &ops,
	};
	ss_setup(f);
	for (unsigned i = 0; i < f->n; i++)
		if (strncmp(f->dev[i].id, "pci:", 4) == 0)
			gc_info("device %u: rsmi_dev_unique_id_get is not supported; found again "
				"by its PCI id", i);
	return f;
}

static void fx_teardown(void *data)
{
	if (ss_may_release(data))
		free(data);
}

/* ------------------------------------------------------------ unknown-uuid */

/*
 * unknown-uuid: an id no device has. The scan visits every index, each
 * answering, and finds nothing: RSMI_STATUS_NOT_FOUND from the scan, never
 * another device. An index past the last one ("Monitors are referenced by
 * the index which can be between 0 and @p num_devices - 1." [src
 * ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h @ rocm-5.2.3]):
 * rsmi_dev_unique_id_get fails with one of its documented failures,
 * RSMI_STATUS_INVALID_ARGS (`the provided arguments are not valid`) or
 * RSMI_STATUS_NOT_SUPPORTED (the software or hardware does not support it
 * with the given arguments); which one is recorded.
 */
struct unknown {
	struct ss_fx *f;
	char id[SS_ID_LEN];
};

static void unknown_lookups(void *ctx)
{
	struct unknown *u = ctx;
	struct ss_fx *f = u->f;
	const char *id = u->id;
	char b[192];
	uintptr_t h = UINTPTR_MAX;
	uint64_t v;
	unsigned n;
	ss_status r;

	r = r_resolve(NULL, id, &h);
	gc_info("scan for %s: %s", id, gc_rsmi_strerror(r, b, sizeof(b)));
	gc_assert_f(r == RSMI_STATUS_NOT_FOUND, "scan for %s: %s (index %ju)", id,
		    gc_rsmi_strerror(r, b, sizeof(b)), (uintmax_t)h);
	ss_ok(f, "rsmi_num_monitor_devices", r_count(NULL, &n));
	r = rsmi_dev_unique_id_get(n, &v);
	gc_info("rsmi_dev_unique_id_get(%u), one past the last device: %s", n,
		gc_rsmi_strerror(r, b, sizeof(b)));
	gc_assert_f(r == RSMI_STATUS_INVALID_ARGS || r == RSMI_STATUS_NOT_SUPPORTED,
		    "rsmi_dev_unique_id_get(%u) with %u devices: %s", n, n,
		    gc_rsmi_strerror(r, b, sizeof(b)));
}

static void test_unknown_uuid(void *data)
{
	struct unknown u = { .f = data };
	struct gc_session s;

	ss_need_devices(u.f);
	ss_unknown_id(u.f, u.id, sizeof(u.id));
	s = ss_session(u.f);
	gc_session_within(&s, unknown_lookups, &u, "unknown-uuid");
}

/* ------------------------------------------------------------ init-flags */

struct flag_case {
	const char *name;
	uint64_t flags;
};

/*
 * init-flags: rsmi_init(0) and RSMI_INIT_FLAG_ALL_GPUS ("Attempt to add all
 * GPUs found (including non-AMD) to the list of devices from which SMI
 * information can be retrieved." "By default, only AMD devices are
 * enumerated by RSMI." [src ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h @
 * rocm-5.2.3]): each initialises, all-gpus sees at least the
 * default's devices, both release what they opened.
 * RSMI_INIT_FLAG_RESRV_TEST1 is `Reserved for test` and not tried.
 */
GC_VARIANTS(struct flag_case, flag_cases, flag_one) = {
	{ "default", 0 },
	{ "all-gpus", RSMI_INIT_FLAG_ALL_GPUS },
};

/* What the cases hand back: the devices each flag_cases[i] saw. */
struct flag_run {
	struct ss_fx *f;
	unsigned n[ARRAY_SIZE(flag_cases)];
};

/* What one init flag opens: its device count and the device nodes; released after. */
static void flag_one(void *ctx, const struct flag_case *c)
{
	struct flag_run *run = ctx;
	struct ss_fx *f = run->f;
	unsigned *n = &run->n[c - flag_cases];
	char fds[512];

	ss_ok(f, "rsmi_init(flags)", rsmi_init(c->flags));
	ss_ok(f, "rsmi_num_monitor_devices", r_count(NULL, n));
	ss_devfds_list(fds, sizeof(fds));
	gc_info("rsmi_init(%#" PRIx64 "): %u devices, device nodes open: %s", c->flags, *n,
		fds[0] ? fds : "none");
	ss_shut(f, "init-flags");
	gc_assert_cmpint(ss_devfds(), ==, f->fds0);
}

static void test_init_flags(void *data)
{
	struct flag_run run = { .f = data };

	ss_need_devices(run.f);
	gc_variants(flag_cases, &run);
	gc_assert_f(run.n[1] >= run.n[0], "RSMI_INIT_FLAG_ALL_GPUS: %u devices, the default %u",
		    run.n[1], run.n[0]);
}

/* ------------------------------------------------------------ main */

static const struct gc_fixture fixture = { .setup = fx_setup, .teardown = fx_teardown,
					   .before_each = ss_before_each,
					   .after_each = ss_after_each };

static const struct gc_subtest subtests[] = {
	SS_SUBTESTS(test_unknown_uuid, "an id no device has: not found; an index past the last: a "
		    "documented failure",
		    test_init_flags, "rsmi_init(0) and RSMI_INIT_FLAG_ALL_GPUS: what each opens, "
		    "released at shutdown")
};

static const char *const soaks[] = SS_SOAKS;

GC_MAIN(.name = "rsmi_session",
	.description = "rocm_smi init / shutdown sessions: refcount, threads, device nodes, ids",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks)
