// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/kfd/topology.c on fixture trees under
 * tests/unit/data/kfd-topology/, written in the format kfd_topology.c
 * prints (read, not run): `name value` lines, nodes/N/gpu_id, a CPU node
 * with gpu_id 0, mem_banks/M/properties with heap_type and size_in_bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "kfd_topology.h"

#ifndef KFD_TOPOLOGY_DATA
#error "KFD_TOPOLOGY_DATA must name tests/unit/data/kfd-topology"
#endif

static struct gc_kfd_topology topo; /* large: keep it off the stack */
static char why[512];

static int read_tree(const char *name)
{
	char root[1024];

	snprintf(root, sizeof(root), "%s/%s", KFD_TOPOLOGY_DATA, name);
	why[0] = '\0';
	return gc_kfd_topology_read(root, &topo, why, sizeof(why));
}

static void test_prop_get(void *fx)
{
	const char *text = "simd_count_x 9\nsimd_count 304\nsize_in_bytes 68702699520\n"
			   "max 18446744073709551615\n";
	uint64_t v = 1;

	(void)fx;
	gc_assert_ok(gc_kfd_prop_get(text, "simd_count", &v));
	gc_assert_eq_uint(v, 304);                  /* not the `simd_count_x` line */
	gc_assert_ok(gc_kfd_prop_get(text, "size_in_bytes", &v));
	gc_assert_eq_uint(v, 68702699520ull);       /* 64-bit values */
	gc_assert_ok(gc_kfd_prop_get(text, "max", &v));
	gc_assert_eq_uint(v, UINT64_MAX);
	gc_assert_errno(gc_kfd_prop_get(text, "simd", &v), ENOENT);  /* prefixes do not match */
	gc_assert_errno(gc_kfd_prop_get("", "simd_count", &v), ENOENT);
	gc_assert_ok(gc_kfd_prop_get("a 1", "a", &v)); /* no final newline */
	gc_assert_eq_uint(v, 1);
}

static void test_prop_get_malformed(void *fx)
{
	uint64_t v = 0;

	(void)fx;
	gc_assert_errno(gc_kfd_prop_get("a 1\nnovalue\n", "a", &v), EINVAL);
	gc_assert_errno(gc_kfd_prop_get("a -1\n", "a", &v), EINVAL);
	gc_assert_errno(gc_kfd_prop_get("a 0x10\n", "a", &v), EINVAL);
	gc_assert_errno(gc_kfd_prop_get("a 18446744073709551616\n", "a", &v), EINVAL);
	gc_assert_errno(gc_kfd_prop_get("a \n", "a", &v), EINVAL);
	gc_assert_errno(gc_kfd_prop_get(" 5\n", "a", &v), EINVAL);
}

static void check_gpu1(const struct gc_kfd_node *n)
{
	gc_assert_eq_uint(n->node_id, 1);
	gc_assert_eq_uint(n->gpu_id, 43127);
	gc_assert_eq_int(n->drm_render_minor, 128);
	gc_assert_eq_uint(n->simd_count, 304);
	gc_assert_eq_uint(n->cpu_cores_count, 0);
	gc_assert_eq_uint(n->vendor_id, 4098);
	gc_assert_eq_uint(n->device_id, 29856);
	gc_assert_eq_uint(n->location_id, 49920);
	gc_assert_eq_uint(n->gfx_target_version, 90402);
	gc_assert_eq_uint(n->capability, 1011524224u);
	gc_assert(n->capability & GC_KFD_CAP_SVMAPI_SUPPORTED);
	gc_assert_eq_uint(n->n_banks, 1);
	gc_assert_eq_uint(n->banks[0].heap_type, GC_KFD_HEAP_FB_PRIVATE);
	gc_assert_eq_uint(n->banks[0].size_in_bytes, 68702699520ull);
	gc_assert_eq_uint(n->banks[0].width, 4096);
	gc_assert_eq_uint(n->banks[0].mem_clk_max, 1600);
	gc_assert_eq_uint(gc_kfd_node_vram_bytes(n), 68702699520ull);
	gc_assert_eq_uint(gc_kfd_node_heap_bytes(n, GC_KFD_HEAP_FB_PUBLIC), 0);
}

static void test_two_gpu(void *fx)
{
	const struct gc_kfd_node *cpu = &topo.nodes[0], *n2;

	(void)fx;
	gc_assert_f(read_tree("two-gpu") == 0, "%s", why);
	gc_assert_eq_uint(topo.generation_id, 7);
	gc_assert_eq_uint(topo.n_nodes, 3);
	gc_assert_eq_uint(topo.n_gpus, 2);
	gc_assert_eq_uint(topo.n_denied, 0);
	gc_assert(!gc_kfd_node_is_gpu(cpu));
	gc_assert_eq_int(cpu->drm_render_minor, -1); /* meaningless on a CPU node */
	gc_assert_eq_uint(cpu->cpu_cores_count, 64);
	gc_assert_eq_uint(gc_kfd_node_heap_bytes(cpu, GC_KFD_HEAP_SYSTEM), 270582939648ull);
	check_gpu1(&topo.nodes[1]);
	n2 = gc_kfd_topology_find(&topo, 5124);
	gc_assert(n2 == &topo.nodes[2]);
	gc_assert_eq_int(n2->drm_render_minor, 129);
	gc_assert(!(n2->capability & GC_KFD_CAP_SVMAPI_SUPPORTED));
	gc_assert_eq_uint(n2->n_banks, 2);
	gc_assert_eq_uint(gc_kfd_node_heap_bytes(n2, GC_KFD_HEAP_FB_PUBLIC),
			  17163091968ull + 1048576ull);
	gc_assert_eq_uint(gc_kfd_node_vram_bytes(n2), 17163091968ull + 1048576ull);
	gc_assert(gc_kfd_topology_find(&topo, 43127) == &topo.nodes[1]);
	gc_assert(gc_kfd_topology_find(&topo, 0) == NULL);  /* the CPU node has no gpu_id */
	gc_assert(gc_kfd_topology_find(&topo, 4242) == NULL);
}

static void test_cpu_only(void *fx)
{
	(void)fx;
	gc_assert_f(read_tree("cpu-only") == 0, "%s", why);
	gc_assert_eq_uint(topo.n_nodes, 1);
	gc_assert_eq_uint(topo.n_gpus, 0);
	gc_assert_eq_uint(topo.nodes[0].gpu_id, 0);
}

/* Each broken tree gives its errno and a reason naming the file. */
static void expect_error(const char *tree, int err, const char *in_why)
{
	int got = read_tree(tree);

	gc_assert_f(got == -err, "%s: got %d (%s), want -%d", tree, got, why, err);
	gc_assert_f(strstr(why, in_why) != NULL, "%s: reason \"%s\" lacks \"%s\"", tree, why,
		    in_why);
}

static void test_errors(void *fx)
{
	(void)fx;
	expect_error("missing-bank", ENOENT, "nodes/0/mem_banks/1/properties");
	expect_error("malformed", EINVAL, "nodes/0/properties: malformed");
	expect_error("no-render-minor", EINVAL, "no \"drm_render_minor\" line");
	expect_error("bad-gpu-id", EINVAL, "nodes/0/gpu_id: not a decimal number");
	expect_error("no-generation", ENOENT, "generation_id");
	expect_error("does-not-exist", ENOENT, "does-not-exist/generation_id");
}

static const struct gc_subtest subtests[] = {
	{ "prop-get", test_prop_get, "key lookup: exact names, 64-bit values" },
	{ "prop-get-malformed", test_prop_get_malformed, "malformed lines and values: EINVAL" },
	{ "two-gpu", test_two_gpu, "a CPU node and two GPU nodes with their banks" },
	{ "cpu-only", test_cpu_only, "no GPU node: zero GPUs, no error" },
	{ "errors", test_errors, "missing bank, malformed file, missing key, bad id, no tree" },
	{ 0 }
};

GC_MAIN(.name = "unit_kfd_topology", .description = "KFD sysfs topology parser",
	.subtests = subtests)
