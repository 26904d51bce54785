// SPDX-License-Identifier: MIT
/*
 * amdsmi_session: the management-session contract (smi_session.h) on AMD SMI (libamd_smi,
 * ROCm's bare-metal amdsmi), opened at run time with the ABI declared in
 * lib/smi/gc_amdsmi_abi.h (amdsmi.h of library version 26.2.1; another
 * major skips, naming it). The subtests are smi_session.h's; this file says
 * how amdsmi does each step and what its documentation promises.
 *
 * amdsmi.h (26.2.1), amdsmi_init and amdsmi_shut_down: "Singleton Design,
 * requires the same number of inits as shutdowns.", each returning
 * AMDSMI_STATUS_SUCCESS on success and non-zero on fail (their `@return`
 * lines) [src ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @
 * a881068735de]; later documentation of amdsmi_init (below) adds that
 * concurrent calls are serialized. What the library keeps depends on its version
 * (see count_promise below): lib.refcounted is set from the version that
 * amdsmi_get_lib_version gives inside the setup's session, and every
 * subtest prints the version and the promise it holds. Nothing says which
 * statuses other calls return when no session is open, or what a handle
 * of an ended session does: those are recorded.
 *
 * Devices are the processors of type AMDSMI_PROCESSOR_TYPE_AMD_GPU found
 * through amdsmi_get_socket_handles and amdsmi_get_processor_handles; a
 * request finds one again by its UUID (amdsmi_get_gpu_device_uuid,
 * amdsmi_get_processor_handle_from_uuid, whose brief says it returns the
 * processor handle from the given UUID). The session a daemon opens is
 * amdsmi_init(AMDSMI_INIT_AMD_GPUS).
 *
 * The host library of AMD's GIM virtualisation hosts (libamdsmi from
 * amd/MxGPU-Virtualization, a separate codebase) is not what this opens;
 * with libamd_smi on such a host, exclusive-node says whether the session
 * holds /dev/gim-smi0.
 *
 * NOT RUN: no AMD GPU and no libamd_smi were available when this was
 * written; here every subtest skips with the loader's words.
 */
/*
 * Later documentation of amdsmi_init (not the 26.2.1 header) adds "Threads
 * may call amdsmi_init and amdsmi_shut_down concurrently; the calls are
 * serialized."
 * [doc https://rocm.docs.amd.com/projects/amdsmi/en/docs-10.2.0/reference/amdsmi-cpp-api/functions.html]
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_amdgpu.h"
#include "gc_amdsmi.h"
#include "smi_session.h"
#include "srcver.h"

#define MAX_SOCKETS 64
#define MAX_PROCESSORS 256 /* AMDSMI_MAX_DEVICES (32) x AMDSMI_MAX_NUM_XCP (8) */

struct afx {
	struct ss_fx ss; /* first: what the subtests are given */
	struct gc_amdsmi a;
	char count_why[400]; /* ss.lib.count_why: the version read and its promise */
};

/* ------------------------------------------------------------ the calls */

static ss_status a_init(void *ctx)
{
	const struct gc_amdsmi *a = ctx;

	return a->fn.init(GC_AMDSMI_INIT_AMD_GPUS);
}

static ss_status a_shutdown(void *ctx)
{
	const struct gc_amdsmi *a = ctx;

	return a->fn.shut_down();
}

/* One socket's AMD GPUs: the index-th into *h (when h), counted into *n. */
static ss_status socket_gpus(const struct gc_amdsmi *a, gc_amdsmi_socket s, unsigned index,
			     uintptr_t *h, unsigned *n)
{
	gc_amdsmi_processor p[MAX_PROCESSORS];
	uint32_t np = MAX_PROCESSORS, type = 0;
	ss_status r = a->fn.processor_handles(s, &np, p);

	for (uint32_t j = 0; r == GC_AMDSMI_STATUS_SUCCESS && j < np && j < MAX_PROCESSORS; j++) {
		r = a->fn.processor_type(p[j], &type);
		if (r != GC_AMDSMI_STATUS_SUCCESS || type != GC_AMDSMI_PROCESSOR_TYPE_AMD_GPU)
			continue;
		if (h && *n == index)
			*h = (uintptr_t)p[j];
		(*n)++;
	}
	return r;
}

/* The session's AMD GPUs, socket by socket, as amdsmi.h enumerates them. */
static ss_status gpus(const struct gc_amdsmi *a, unsigned index, uintptr_t *h, unsigned *n)
{
	gc_amdsmi_socket s[MAX_SOCKETS];
	uint32_t ns = MAX_SOCKETS;
	ss_status r = a->fn.socket_handles(&ns, s);

	*n = 0;
	for (uint32_t i = 0; r == GC_AMDSMI_STATUS_SUCCESS && i < ns && i < MAX_SOCKETS; i++)
		r = socket_gpus(a, s[i], index, h, n);
	return r;
}

static ss_status a_count(void *ctx, unsigned *n)
{
	return gpus(ctx, UINT_MAX, NULL, n);
}

/* The index-th AMD GPU; AMDSMI_STATUS_NOT_FOUND (`Processor Not found`) past the last. */
static ss_status a_handle(void *ctx, unsigned index, uintptr_t *h)
{
	unsigned n;
	ss_status r = gpus(ctx, index, h, &n);

	return r == GC_AMDSMI_STATUS_SUCCESS && index >= n ? GC_AMDSMI_STATUS_NOT_FOUND : r;
}

static ss_status a_resolve(void *ctx, const char *id, uintptr_t *h)
{
	const struct gc_amdsmi *a = ctx;
	gc_amdsmi_processor p = NULL;
	ss_status r = a->fn.by_uuid(id, &p);

	*h = (uintptr_t)p;
	return r;
}

/*
 * amdsmi_get_gpu_device_uuid, of uuid_length: "As input, must be equal or greater than
 * AMDSMI_GPU_UUID_SIZE and be allocated by user." [src ROCm/rocm-systems
 * projects/amdsmi/include/amd_smi/amdsmi.h @ a881068735de]
 */
static ss_status a_id_of(void *ctx, uintptr_t h, char *id, size_t len)
{
	const struct gc_amdsmi *a = ctx;
	unsigned int l = (unsigned int)len - 1;

	_Static_assert(SS_ID_LEN > GC_AMDSMI_GPU_UUID_SIZE, "room for a UUID");
	memset(id, 0, len);
	return a->fn.uuid((gc_amdsmi_processor)h, &l, id);
}

/* A fixed-size char field of the ABI (terminated or not) as a string, cut to fit. */
static void copy_field(char *dst, size_t len, const char *src, size_t src_len)
{
	size_t n = strnlen(src, src_len);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void a_query(void *ctx, uintptr_t h, struct ss_answer *ans)
{
	const struct gc_amdsmi *a = ctx;
	gc_amdsmi_processor p = (gc_amdsmi_processor)h;
	gc_amdsmi_asic_info info;
	uint64_t bdf;
	int64_t temp;
	uint32_t busy;

	memset(ans, 0, sizeof(*ans));
	memset(&info, 0, sizeof(info));
	ans->st[SS_Q_NAME] = ans->st[SS_Q_SERIAL] = a->fn.asic_info(p, &info);
	if (ans->st[SS_Q_NAME] == GC_AMDSMI_STATUS_SUCCESS) {
		copy_field(ans->name, sizeof(ans->name), info.market_name,
			   sizeof(info.market_name));
		copy_field(ans->serial, sizeof(ans->serial), info.asic_serial,
			   sizeof(info.asic_serial));
	}
	ans->st[SS_Q_BUS] = a->fn.bdf_id(p, &bdf);
	if (ans->st[SS_Q_BUS] == GC_AMDSMI_STATUS_SUCCESS)
		gc_amdgpu_bdf(bdf, ans->bus, sizeof(ans->bus));
	ans->st[SS_Q_MEM] = a->fn.memory_total(p, GC_AMDSMI_MEM_TYPE_VRAM, &ans->mem_total);
	ans->st[SS_Q_TEMP] = a->fn.temp_metric(p, GC_AMDSMI_TEMPERATURE_TYPE_HOTSPOT,
					       GC_AMDSMI_TEMP_CURRENT, &temp);
	ans->st[SS_Q_BUSY] = a->fn.busy_percent(p, &busy);
}

static const char *a_strerror(void *ctx, ss_status r, char *buf, size_t len)
{
	return gc_amdsmi_strerror(ctx, r, buf, len);
}

/*
 * The promise of the version that runs. amdsmi_init and amdsmi_shut_down
 * as read:
 *
 * - 24.7.0 and every ROCm/amdsmi tag from rocm-5.5.0 on: `if (initialized_lib)`
 *   `return AMDSMI_STATUS_SUCCESS;` in amdsmi_init, and amdsmi_shut_down
 *   runs `cleanup()` and sets `initialized_lib = false` on the first call
 *   [src ROCm/amdsmi src/amd_smi/amd_smi.cc @ 0ceca28f4139]: a bool, no
 *   count; the first shutdown ends every session.
 * - 26.2.1: `if (init_ref_count > 0 )` `init_ref_count++;` in amdsmi_init,
 *   and amdsmi_shut_down decrements it and calls `cleanup()` only when it
 *   reaches 0 [src paklui/rocm-systems projects/amdsmi/src/amd_smi/amd_smi.cc
 *   @ 855bb2203905]: a count, with no lock around the test, the init and
 *   the change.
 * - 27.1.0: the same test-then-init in amdsmi_init
 *   [src amd-vkale/rocm-systems projects/amdsmi/src/amd_smi/amd_smi.cc
 *   @ 5d4ce3a988c2], through `amdsmi_library_init_ref_acquire()`, the count
 *   an `std::atomic<int32_t>` but no lock around init / cleanup
 *   [src amd-vkale/rocm-systems projects/amdsmi/src/amd_smi/amd_smi_common.cc
 *   @ 5d4ce3a988c2].
 *
 * Between 24.7.0 and 26.2.1 (25.x, 26.0.x, 26.1.x, 26.2.0) no source was
 * read: the count is unknown there, recorded and not asserted. From 26.2.1
 * nested sessions are held to the count; concurrent inits and shutdowns
 * are held to it too (the docs-10.2.0 text promises serialization), but
 * the source predicts they race, and the output says so.
 */
static void count_promise(struct afx *x)
{
	const struct gc_amdsmi *a = &x->a;
	struct gc_amdsmi_count_rule rule = gc_amdsmi_count_rule(a->major, a->minor, a->release);
	char ver[48];

	snprintf(ver, sizeof(ver), "%u.%u.%u", a->major, a->minor, a->release);
	switch (rule.count) {
	case GC_AMDSMI_COUNT_NONE:
		snprintf(x->count_why, sizeof(x->count_why), "amdsmi %s (%s), %s: a second init "
			 "does nothing, the first shutdown ends every session; recorded", ver,
			 a->soname, rule.why);
		break;
	case GC_AMDSMI_COUNT_UNKNOWN:
		snprintf(x->count_why, sizeof(x->count_why), "unknown for version %s (%s), %s; "
			 "recorded, not asserted", ver, a->soname, rule.why);
		break;
	default:
		snprintf(x->count_why, sizeof(x->count_why), "amdsmi %s (%s), %s: nested "
			 "sessions asserted; concurrent init / shutdown asserted as the "
			 "docs-10.2.0 text promises, but predicted broken (no lock in the source)",
			 ver, a->soname, rule.why);
		break;
	}
	x->ss.lib.refcounted = rule.count == GC_AMDSMI_COUNT_UNLOCKED;
	x->ss.lib.count_why = x->count_why;
	gc_info("%s", x->count_why);
}

/* The fixture that holds a library table (ctx is &afx.a). */
static struct afx *afx_of(void *ctx)
{
	return (struct afx *)((char *)ctx - offsetof(struct afx, a));
}

/*
 * Inside the setup's session: the ABI major gc_amdsmi_abi.h declares, every
 * query symbol; the version read sets the count promise.
 */
static int a_usable(void *ctx, char *why, size_t len)
{
	struct gc_amdsmi *a = ctx;
	const char *missing;
	int r = gc_amdsmi_check_version(a, why, len);

	if (a->have_version)
		count_promise(afx_of(ctx));
	if (r)
		return r;
	missing = gc_amdsmi_missing(a);
	if (!missing)
		return 0;
	snprintf(why, len, "%s: no symbol %s", a->soname, missing);
	return -ENOSYS;
}

static const struct ss_ops ops = {
	.init = a_init, .shutdown = a_shutdown, .count = a_count, .handle = a_handle,
	.resolve = a_resolve, .id_of = a_id_of, .query = a_query, .strerror = a_strerror,
	.usable = a_usable,
};

/* ------------------------------------------------------------ fixture */

static void *fx_setup(void)
{
	struct afx *x = calloc(1, sizeof(*x));
	char why[320], clause[320];
	int cards;

	gc_assert(x);
	if (gc_amdsmi_open(&x->a, why, sizeof(why)) < 0) {
		free(x);
		gc_skip("%s; %s", why, gc_amdgpu_clause(GC_AMDGPU_DRM_DIR, &cards, clause,
							 sizeof(clause)));
	}
	x->ss.lib = (struct ss_lib){
		.name = "amdsmi", .init_call = "amdsmi_init(AMDSMI_INIT_AMD_GPUS)",
		.shutdown_call = "amdsmi_shut_down",
		.count_call = "amdsmi_get_socket_handles/amdsmi_get_processor_handles",
		.handle_call = "amdsmi_get_processor_handles",
		.resolve_call = "amdsmi_get_processor_handle_from_uuid",
		.id_call = "amdsmi_get_gpu_device_uuid",
		.query_call = { "amdsmi_get_gpu_asic_info(market_name)",
				"amdsmi_get_gpu_asic_info(asic_serial)", "amdsmi_get_gpu_bdf_id",
				"amdsmi_get_gpu_memory_total(VRAM)",
				"amdsmi_get_temp_metric(HOTSPOT, CURRENT)",
				"amdsmi_get_gpu_busy_percent" },
		.refcounted = false,
		.count_why = "amdsmi version not read (no session opened): recorded",
		.ops = &ops, .ctx = &x->a,
	};
	ss_setup(&x->ss);
	return x;
}

static void fx_teardown(void *data)
{
	struct afx *x = data;

	if (!ss_may_release(&x->ss))
		return;
	gc_amdsmi_close(&x->a);
	free(x);
}

/* ------------------------------------------------------------ unknown-uuid */

/* A UUID nobody has: whatever the status, not success (and, if it were, which device). */
static void expect_no_device(struct afx *x, const char *uuid, const char *what)
{
	struct ss_fx *f = &x->ss;
	gc_amdsmi_processor p = NULL;
	char b[192], id[SS_ID_LEN] = "";
	ss_status r = x->a.fn.by_uuid(uuid, &p);

	if (r == GC_AMDSMI_STATUS_SUCCESS)
		a_id_of(&x->a, (uintptr_t)p, id, sizeof(id));
	gc_info("%s, %s: %s", what, uuid, ss_rs(f, r, b, sizeof(b)));
	gc_assert_f(r != GC_AMDSMI_STATUS_SUCCESS, "amdsmi_get_processor_handle_from_uuid(%s), "
		    "%s, succeeded: the processor whose UUID is %s", uuid, what, id);
}

/*
 * unknown-uuid: amdsmi_get_processor_handle_from_uuid returns the processor
 * handle from the given UUID, and non-zero on fail (its `@brief` and `@return`
 * lines) [src ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @
 * a881068735de]: a well-formed UUID no device has, and a malformed one, cannot
 * succeed. Which non-zero status each gives is not documented and is recorded.
 */
struct unknown {
	struct afx *x;
	char uuid[SS_ID_LEN];
};

static void unknown_lookups(void *ctx)
{
	struct unknown *u = ctx;

	expect_no_device(u->x, u->uuid, "a UUID no device has");
	expect_no_device(u->x, "not-a-uuid", "a malformed UUID");
}

static void test_unknown_uuid(void *data)
{
	struct unknown u = { .x = data };
	struct ss_fx *f = &u.x->ss;
	struct gc_session s;

	ss_need_devices(f);
	ss_unknown_id(f, u.uuid, sizeof(u.uuid));
	s = ss_session(f);
	gc_session_within(&s, unknown_lookups, &u, "unknown-uuid");
}

/* ------------------------------------------------------------ init-flags */

struct flag_case {
	const char *name;
	uint64_t flags;
};

GC_VARIANTS(struct flag_case, flag_cases, flag_one) = {
	{ "amd-gpus", GC_AMDSMI_INIT_AMD_GPUS },
	{ "amd-cpus", GC_AMDSMI_INIT_AMD_CPUS },
	{ "amd-apus", GC_AMDSMI_INIT_AMD_APUS },
	{ "non-amd-gpus", GC_AMDSMI_INIT_NON_AMD_GPUS },
	{ "non-amd-cpus", GC_AMDSMI_INIT_NON_AMD_CPUS },
	{ "all-processors", GC_AMDSMI_INIT_ALL_PROCESSORS },
};

/*
 * What one processor-type flag opens: the init's status, the AMD GPUs it
 * lists, the device nodes; released at shutdown. amdsmi.h: "AMDSMI_INIT_AMD_GPUS
 * returns sockets with AMD GPUS, and AMDSMI_INIT_AMD_GPUS |
 * AMDSMI_INIT_AMD_CPUS returns sockets with either AMD GPUS or CPUS." "Both
 * AMDSMI_INIT_AMD_GPUS and AMDSMI_INIT_AMD_CPUS flags are supported." [src
 * ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @ a881068735de] So
 * AMD_GPUS must initialise, and any init that succeeds with the GPU bit
 * lists the reference session's GPUs. Whether the CPU and non-AMD flags
 * initialise depends on drivers the docs name only as statuses
 * (AMDSMI_STATUS_NO_HSMP_DRV, AMDSMI_STATUS_NON_AMD_CPU...): recorded.
 */
static void flag_one(void *ctx, const struct flag_case *c)
{
	struct afx *x = ctx;
	struct ss_fx *f = &x->ss;
	const struct gc_amdsmi *a = &x->a;
	uint64_t flags = c->flags;
	char fds[512], b[192], bc[192];
	ss_status r = a->fn.init(flags), rc = GC_AMDSMI_STATUS_NOT_INIT;
	unsigned n = 0;

	ss_devfds_list(fds, sizeof(fds));
	if (r == GC_AMDSMI_STATUS_SUCCESS)
		rc = a_count(&x->a, &n);
	gc_info("amdsmi_init(%#" PRIx64 "): %s; AMD GPUs: %s, %u; device nodes open: %s", flags,
		ss_rs(f, r, b, sizeof(b)), r ? "-" : ss_rs(f, rc, bc, sizeof(bc)), n,
		fds[0] ? fds : "none");
	if (r == GC_AMDSMI_STATUS_SUCCESS)
		ss_shut(f, c->name);
	gc_assert_cmpint(ss_devfds(), ==, f->fds0);
	if (flags == GC_AMDSMI_INIT_AMD_GPUS)
		ss_ok(f, "amdsmi_init(AMDSMI_INIT_AMD_GPUS)", r);
	if (r == GC_AMDSMI_STATUS_SUCCESS && (flags & GC_AMDSMI_INIT_AMD_GPUS))
		gc_assert_f(rc == GC_AMDSMI_STATUS_SUCCESS && n == f->seen, "amdsmi_init(%#" PRIx64
			    "): %s, %u AMD GPUs; the reference session saw %u", flags,
			    ss_rs(f, rc, bc, sizeof(bc)), n, f->seen);
}

static void test_init_flags(void *data)
{
	struct afx *x = data;

	ss_need_devices(&x->ss);
	gc_variants(flag_cases, x);
}

/* ------------------------------------------------------------ main */

static const struct gc_fixture fixture = { .setup = fx_setup, .teardown = fx_teardown,
					   .before_each = ss_before_each,
					   .after_each = ss_after_each };

static const struct gc_subtest subtests[] = {
	SS_SUBTESTS(test_unknown_uuid, "a UUID that names no device, a malformed one: never success",
		    test_init_flags, "each processor-type flag of amdsmi_init: what it opens, "
		    "released at shutdown")
};

static const char *const soaks[] = SS_SOAKS;

GC_MAIN(.name = "amdsmi_session",
	.description = "AMD SMI init / shutdown sessions: refcount, threads, device nodes, UUIDs",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks)
