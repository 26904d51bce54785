// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/hsa's pure helpers that hsa_pools decides with: the
 * status names its messages print, granule rounding (what
 * hsa_amd_memory_pool_allocate's size must come back as), an agent list with
 * a bad agent inserted at each position and the set comparison of
 * hsa_amd_pointer_info's accessible lists, and the one-line spec handed to
 * the re-executed IPC child. No ROCr is loaded: the helpers only use the
 * header types.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core.h"
#include "gc_hsa.h"

static hsa_agent_t ag(uint64_t h)
{
	return (hsa_agent_t){ h };
}

static void test_status_names(void *data)
{
	(void)data;
	gc_assert_eq_str(gc_hsa_status_name(HSA_STATUS_SUCCESS), "HSA_STATUS_SUCCESS");
	gc_assert_eq_str(gc_hsa_status_name(HSA_STATUS_ERROR_INVALID_AGENT),
			 "HSA_STATUS_ERROR_INVALID_AGENT");
	gc_assert_eq_str(gc_hsa_status_name(HSA_STATUS_ERROR_INVALID_ARGUMENT),
			 "HSA_STATUS_ERROR_INVALID_ARGUMENT");
	gc_assert_eq_str(gc_hsa_status_name(HSA_STATUS_ERROR_INVALID_ALLOCATION),
			 "HSA_STATUS_ERROR_INVALID_ALLOCATION");
	/* hsa_ext_amd.h's own codes sit below 0x1000: 40 is INVALID_MEMORY_POOL. */
	gc_assert_eq_str(gc_hsa_status_name((hsa_status_t)40),
			 "HSA_STATUS_ERROR_INVALID_MEMORY_POOL");
	gc_assert(gc_hsa_status_name((hsa_status_t)0x1fff) == NULL);
	gc_assert(gc_hsa_status_name((hsa_status_t)39) == NULL);
}

static void test_round_up(void *data)
{
	size_t out = 12345;

	(void)data;
	gc_assert(gc_hsa_round_up(1, 4096, &out));
	gc_assert_eq_uint(out, 4096);
	gc_assert(gc_hsa_round_up(4096, 4096, &out));
	gc_assert_eq_uint(out, 4096);
	gc_assert(gc_hsa_round_up(4097, 4096, &out));
	gc_assert_eq_uint(out, 8192);
	gc_assert(gc_hsa_round_up(0, 4096, &out));
	gc_assert_eq_uint(out, 0);
	gc_assert(gc_hsa_round_up(7, 3, &out)); /* not only powers of two */
	gc_assert_eq_uint(out, 9);
	out = 77;
	gc_assert(!gc_hsa_round_up(1, 0, &out));          /* no granule */
	gc_assert(!gc_hsa_round_up(SIZE_MAX, 4096, &out)); /* would wrap */
	gc_assert(!gc_hsa_round_up(SIZE_MAX - 4094, 4096, &out));
	gc_assert_eq_uint(out, 77); /* untouched on failure */
	gc_assert(gc_hsa_round_up(SIZE_MAX - 4095, 4096, &out)); /* a multiple already */
	gc_assert_eq_uint(out, SIZE_MAX - 4095);
}

static void test_list_with(void *data)
{
	const hsa_agent_t in[3] = { ag(11), ag(22), ag(33) };
	hsa_agent_t out[4];
	const uint64_t want[4][4] = {
		{ 99, 11, 22, 33 }, { 11, 99, 22, 33 }, { 11, 22, 99, 33 }, { 11, 22, 33, 99 },
	};

	(void)data;
	for (size_t pos = 0; pos <= 3; pos++) {
		memset(out, 0, sizeof(out));
		gc_hsa_list_with(in, 3, ag(99), pos, out);
		for (size_t i = 0; i < 4; i++)
			gc_assert_f(out[i].handle == want[pos][i],
				    "pos %zu: out[%zu] = %llu, want %llu", pos, i,
				    (unsigned long long)out[i].handle,
				    (unsigned long long)want[pos][i]);
	}
	gc_hsa_list_with(in, 0, ag(5), 0, out); /* an empty list: the bad agent alone */
	gc_assert_eq_uint(out[0].handle, 5);
}

static void test_same_agents(void *data)
{
	const hsa_agent_t a[] = { ag(1), ag(2), ag(3) };
	const hsa_agent_t b[] = { ag(3), ag(1), ag(2), ag(1) };
	const hsa_agent_t c[] = { ag(1), ag(2) };
	const hsa_agent_t d[] = { ag(1), ag(2), ag(4) };

	(void)data;
	gc_assert(gc_hsa_agent_in(a, 3, ag(2)));
	gc_assert(!gc_hsa_agent_in(a, 3, ag(4)));
	gc_assert(!gc_hsa_agent_in(a, 0, ag(1)));
	gc_assert(gc_hsa_same_agents(a, 3, b, 4));  /* order and repetition do not matter */
	gc_assert(!gc_hsa_same_agents(a, 3, c, 2)); /* one granted too few */
	gc_assert(!gc_hsa_same_agents(c, 2, a, 3)); /* ... or too many */
	gc_assert(!gc_hsa_same_agents(a, 3, d, 3));
	gc_assert(gc_hsa_same_agents(a, 0, c, 0));
	gc_assert(!gc_hsa_same_agents(a, 0, c, 1));
}

static struct gc_hsa_ipc_spec sample_spec(void)
{
	struct gc_hsa_ipc_spec s = { .mode = 1, .node = 3, .len = 2097152, .seen = 0x5eed0001,
				     .write = 0xfeedbeef };

	for (unsigned i = 0; i < 8; i++)
		s.handle.handle[i] = (0x01020304u * (i + 1)) ^ (0x80000000u * (i & 1));
	return s;
}

static void test_ipc_spec_roundtrip(void *data)
{
	struct gc_hsa_ipc_spec s = sample_spec(), r;
	char buf[GC_HSA_IPC_SPEC_MAX];

	(void)data;
	gc_assert_ok(gc_hsa_ipc_spec_format(&s, buf, sizeof(buf)));
	gc_assert_eq_str(buf, "1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
			 ":050a0f14:860c1218:070e151c:88101820");
	memset(&r, 0xa5, sizeof(r));
	gc_assert_ok(gc_hsa_ipc_spec_parse(buf, &r));
	gc_assert_eq_uint(r.mode, 1);
	gc_assert_eq_uint(r.node, 3);
	gc_assert_eq_uint(r.len, 2097152);
	gc_assert_eq_uint(r.seen, 0x5eed0001);
	gc_assert_eq_uint(r.write, 0xfeedbeef);
	for (unsigned i = 0; i < 8; i++)
		gc_assert_eq_uint(r.handle.handle[i], s.handle.handle[i]);
	/* The largest values fit the documented maximum length. */
	memset(&s, 0xff, sizeof(s));
	gc_assert_ok(gc_hsa_ipc_spec_format(&s, buf, sizeof(buf)));
	gc_assert_ok(gc_hsa_ipc_spec_parse(buf, &r));
	gc_assert_eq_uint(r.len, UINT64_MAX);
	gc_assert_eq_uint(r.mode, UINT32_MAX);
	gc_assert_eq_uint(r.node, UINT32_MAX);
	gc_assert_eq_uint(r.handle.handle[7], UINT32_MAX);
	/* Upper-case hex is read too. */
	gc_assert_ok(gc_hsa_ipc_spec_parse("0:0:1:ABCDEF01:00000000:00000000:00000000:00000000"
					   ":00000000:00000000:00000000:00000000:0000000F", &r));
	gc_assert_eq_uint(r.seen, 0xabcdef01);
	gc_assert_eq_uint(r.handle.handle[7], 15);
}

static void test_ipc_spec_short_buffer(void *data)
{
	struct gc_hsa_ipc_spec s = sample_spec();
	char buf[GC_HSA_IPC_SPEC_MAX];
	size_t need;

	(void)data;
	gc_assert_ok(gc_hsa_ipc_spec_format(&s, buf, sizeof(buf)));
	need = strlen(buf) + 1;
	gc_assert_ok(gc_hsa_ipc_spec_format(&s, buf, need));
	gc_assert_errno(gc_hsa_ipc_spec_format(&s, buf, need - 1), ENOSPC);
	gc_assert_errno(gc_hsa_ipc_spec_format(&s, buf, 5), ENOSPC);
}

static void test_ipc_spec_rejects(void *data)
{
	static const char *const bad[] = {
		"",
		"1",
		"1:3:2097152:5eed0001:feedbeef",                                 /* no handle */
		"1:3:2097152:5eed0001:feedbeef:1:2:3:4:5:6:7:8",                 /* short hex */
		"1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c",                                   /* 7 words */
		"1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820:",                         /* trailing : */
		"1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820:00000000",                 /* 9 words */
		"1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:8810182g",                          /* not hex */
		"1:-3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820",                          /* sign */
		" 1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820",                          /* space */
		"1:4294967296:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820",                          /* node > u32 */
		"4294967296:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820",                          /* mode > u32 */
		"1:3:18446744073709551616:5eed0001:feedbeef:01020304:82040608:0306090c"
		":84080c10:050a0f14:860c1218:070e151c:88101820",                 /* len > u64 */
		"1:3::5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820",                          /* empty len */
		"3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820",                          /* no mode */
		"1:3:2097152:5eed0001:feedbeef:01020304:82040608:0306090c:84080c10"
		":050a0f14:860c1218:070e151c:88101820 ",                         /* blank after */
	};

	struct gc_hsa_ipc_spec r, before;

	(void)data;
	memset(&r, 0x3c, sizeof(r));
	before = r;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		gc_check_f(gc_hsa_ipc_spec_parse(bad[i], &r) == -EINVAL, "accepted \"%s\"", bad[i]);
		gc_check_f(memcmp(&r, &before, sizeof(r)) == 0, "\"%s\" changed the output",
			   bad[i]);
	}
}

static const struct gc_subtest subtests[] = {
	{ "status-names", test_status_names, "hsa.h and hsa_ext_amd.h status names; others NULL" },
	{ "round-up", test_round_up, "granule rounding, exact multiples, no granule, wrap-around" },
	{ "list-with", test_list_with, "a bad agent inserted at every position of a list" },
	{ "same-agents", test_same_agents, "accessible lists compared as sets" },
	{ "ipc-spec-roundtrip", test_ipc_spec_roundtrip,
	  "IPC child spec: formatted and parsed back, extremes, upper-case hex" },
	{ "ipc-spec-short-buffer", test_ipc_spec_short_buffer, "a buffer too small: ENOSPC" },
	{ "ipc-spec-rejects", test_ipc_spec_rejects,
	  "missing, extra, malformed or out-of-range fields: EINVAL, output untouched" },
	{ 0 }
};

GC_MAIN(.name = "unit_hsa_pools",
	.description = "lib/hsa pure helpers: status names, granules, agent lists, IPC spec",
	.subtests = subtests)
