/* SPDX-License-Identifier: MIT */
/*
 * KFD topology from sysfs: pure parsing, no AMD header needed, so it is
 * unit-tested on fixture trees (tests/unit/data/kfd-topology/).
 *
 * Layout read (per the kernel's kfd_topology.c, read, not run):
 *   ROOT/generation_id                       one number
 *   ROOT/nodes/N/gpu_id                      one number; 0 for a CPU-only node
 *   ROOT/nodes/N/properties                  `key value` lines (simd_count,
 *                                            drm_render_minor, ...)
 *   ROOT/nodes/N/mem_banks/M/properties      `key value` lines (heap_type,
 *                                            size_in_bytes, flags, width,
 *                                            mem_clk_max)
 * with ROOT = GC_KFD_TOPOLOGY_ROOT on a real system.
 */
#ifndef GPUCONFORM_KFD_TOPOLOGY_H
#define GPUCONFORM_KFD_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_KFD_TOPOLOGY_ROOT "/sys/class/kfd/kfd/topology"
#define GC_KFD_MAX_NODES 64
#define GC_KFD_MAX_BANKS 8

/* mem_banks heap_type values (kfd_topology.h HSA_MEM_HEAP_TYPE_*). */
#define GC_KFD_HEAP_SYSTEM 0
#define GC_KFD_HEAP_FB_PUBLIC 1
#define GC_KFD_HEAP_FB_PRIVATE 2

/* node capability bit: the GPU supports the SVM API (kfd_topology.h). */
#define GC_KFD_CAP_SVMAPI_SUPPORTED 0x08000000u

struct gc_kfd_bank {
	uint32_t heap_type;
	uint64_t size_in_bytes;
	uint32_t flags;
	uint32_t width;
	uint32_t mem_clk_max;
};

struct gc_kfd_node {
	unsigned node_id;           /* N of nodes/N */
	uint32_t gpu_id;            /* 0: CPU-only node */
	uint32_t simd_count;        /* 0 on a CPU-only node */
	uint32_t cpu_cores_count;
	int32_t drm_render_minor;   /* -1 when absent (CPU node) */
	uint32_t vendor_id, device_id, location_id, domain;
	uint32_t gfx_target_version;
	uint32_t capability;        /* HSA_CAP_* bits (kfd_topology.h) */
	unsigned n_banks;
	struct gc_kfd_bank banks[GC_KFD_MAX_BANKS];
};

struct gc_kfd_topology {
	uint64_t generation_id;
	unsigned n_nodes;
	struct gc_kfd_node nodes[GC_KFD_MAX_NODES];
	unsigned n_gpus;            /* nodes with gpu_id != 0 */
	unsigned n_denied;          /* nodes skipped: reading gpu_id gave EPERM */
};

/*
 * Read the whole tree under root (the directory holding generation_id and
 * nodes/). Nodes are read in numeric order 0, 1, ... until the first missing
 * one. A node whose gpu_id read gives EPERM (kfd_topology.c refuses GPUs the
 * device cgroup denies) is skipped and counted in n_denied. A GPU node must
 * have drm_render_minor; banks 0 .. mem_banks_count - 1 must all exist. generation_id is read before and after: a change gives -EAGAIN (the
 * topology moved under us; the caller decides, nothing is retried here).
 * Errors: -errno of the failing open/read, -EINVAL for a malformed file,
 * -E2BIG for more than GC_KFD_MAX_NODES nodes / GC_KFD_MAX_BANKS banks, with
 * the path and the cause in why[].
 */
int gc_kfd_topology_read(const char *root, struct gc_kfd_topology *t, char *why,
			 size_t why_len);

/*
 * Parse `key value` lines: the value of key into *val. 0, -ENOENT when the
 * key is absent, -EINVAL when a line is malformed or the value is not a
 * decimal unsigned 64-bit number.
 */
int gc_kfd_prop_get(const char *text, const char *key, uint64_t *val);

/* The node with this gpu_id, or NULL (never for gpu_id 0). */
const struct gc_kfd_node *gc_kfd_topology_find(const struct gc_kfd_topology *t,
					       uint32_t gpu_id);

/* Sum of size_in_bytes over the node's banks of this heap type. */
uint64_t gc_kfd_node_heap_bytes(const struct gc_kfd_node *n, uint32_t heap_type);

/* VRAM: FB_PUBLIC + FB_PRIVATE banks. */
uint64_t gc_kfd_node_vram_bytes(const struct gc_kfd_node *n);

/* printf into why[len] (nothing when why is NULL or len 0): the one-line reasons above. */
void gc_kfd_why(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline bool gc_kfd_node_is_gpu(const struct gc_kfd_node *n)
{
	return n->gpu_id != 0;
}

#endif
