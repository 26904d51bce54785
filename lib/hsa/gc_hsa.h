/* SPDX-License-Identifier: MIT */
/*
 * ROCr (HSA runtime) opened at run time, one GPU agent, its code object and
 * AQL dispatches of gc_stamp / gc_gate: shared by hsa_signals and hip_bubbles.
 *
 * UNVERIFIED ON HARDWARE: built against Debian 12's <hsa/hsa.h> and
 * <hsa/hsa_ext_amd.h> (ROCm 5.2.3) with no AMD GPU; seen only skipping.
 *
 * libhsa-runtime64.so.1 is dlopen'd (the soname has been .1 since ROCm 1.x),
 * never linked: the binaries start on machines without ROCm and skip with the
 * loader's words. Every function is looked up by name; a missing one skips
 * naming it. Functions return 0 or -errno and put a reason in why[].
 */
#ifndef GPUCONFORM_GC_HSA_H
#define GPUCONFORM_GC_HSA_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_HSA_LIB "libhsa-runtime64.so.1"
#define GC_HSA_BLOCK 256 /* the kernels' reqd_work_group_size */

/*
 * hsa_ext_amd.h of ROCm >= 6.1 (ROCR-Runtime): "HSA_AMD_AGENT_INFO_TIMESTAMP_
 * FREQUENCY = 0xA016: Timestamp value increase rate, in Hz". Debian's 5.2.3
 * header lacks it; ROCr then answers HSA_STATUS_ERROR_INVALID_ARGUMENT.
 */
#define GC_HSA_AGENT_INFO_TIMESTAMP_FREQUENCY 0xA016

struct gc_hsa_fn {
	hsa_status_t (*init)(void);
	hsa_status_t (*shut_down)(void);
	hsa_status_t (*status_string)(hsa_status_t, const char **);
	hsa_status_t (*system_get_info)(hsa_system_info_t, void *);
	hsa_status_t (*iterate_agents)(hsa_status_t (*)(hsa_agent_t, void *), void *);
	hsa_status_t (*agent_get_info)(hsa_agent_t, hsa_agent_info_t, void *);
	hsa_status_t (*queue_create)(hsa_agent_t, uint32_t, hsa_queue_type32_t,
				     void (*)(hsa_status_t, hsa_queue_t *, void *), void *,
				     uint32_t, uint32_t, hsa_queue_t **);
	hsa_status_t (*queue_destroy)(hsa_queue_t *);
	uint64_t (*queue_load_read_index_scacquire)(const hsa_queue_t *);
	uint64_t (*queue_add_write_index_scacq_screl)(const hsa_queue_t *, uint64_t);
	hsa_status_t (*signal_create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *,
				      hsa_signal_t *);
	hsa_status_t (*signal_destroy)(hsa_signal_t);
	void (*signal_store_screlease)(hsa_signal_t, hsa_signal_value_t);
	hsa_signal_value_t (*signal_load_scacquire)(hsa_signal_t);
	hsa_signal_value_t (*signal_wait_scacquire)(hsa_signal_t, hsa_signal_condition_t,
						    hsa_signal_value_t, uint64_t, hsa_wait_state_t);
	hsa_status_t (*amd_signal_create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *,
					  uint64_t, hsa_signal_t *);
	hsa_status_t (*amd_agent_iterate_memory_pools)(hsa_agent_t,
		hsa_status_t (*)(hsa_amd_memory_pool_t, void *), void *);
	hsa_status_t (*amd_memory_pool_get_info)(hsa_amd_memory_pool_t,
						 hsa_amd_memory_pool_info_t, void *);
	hsa_status_t (*amd_memory_pool_allocate)(hsa_amd_memory_pool_t, size_t, uint32_t, void **);
	hsa_status_t (*amd_memory_pool_free)(void *);
	hsa_status_t (*amd_agents_allow_access)(uint32_t, const hsa_agent_t *, const uint32_t *,
						const void *);
	hsa_status_t (*code_object_reader_create_from_memory)(const void *, size_t,
							      hsa_code_object_reader_t *);
	hsa_status_t (*code_object_reader_destroy)(hsa_code_object_reader_t);
	hsa_status_t (*executable_create_alt)(hsa_profile_t, hsa_default_float_rounding_mode_t,
					      const char *, hsa_executable_t *);
	hsa_status_t (*executable_load_agent_code_object)(hsa_executable_t, hsa_agent_t,
							  hsa_code_object_reader_t, const char *,
							  hsa_loaded_code_object_t *);
	hsa_status_t (*executable_freeze)(hsa_executable_t, const char *);
	hsa_status_t (*executable_get_symbol_by_name)(hsa_executable_t, const char *,
						      const hsa_agent_t *, hsa_executable_symbol_t *);
	hsa_status_t (*executable_symbol_get_info)(hsa_executable_symbol_t,
						   hsa_executable_symbol_info_t, void *);
	hsa_status_t (*executable_destroy)(hsa_executable_t);
	hsa_status_t (*amd_profiling_set_profiler_enabled)(hsa_queue_t *, int);
	hsa_status_t (*amd_profiling_get_dispatch_time)(hsa_agent_t, hsa_signal_t,
							hsa_amd_profiling_dispatch_time_t *);
};

struct gc_hsa_kernel {
	uint64_t object;
	uint32_t kernarg_size, group_size, private_size;
};

struct gc_hsa {
	void *lib;
	struct gc_hsa_fn f;
	bool inited;
	hsa_agent_t gpu, cpu;
	char gpu_name[64];
	uint64_t gpu_ts_hz;               /* 0: the runtime does not say */
	uint32_t queue_max;
	hsa_amd_memory_pool_t kernarg_pool; /* system, KERNARG_INIT: host-written, GPU-read */
	hsa_amd_memory_pool_t fine_pool;    /* system, fine-grained: both sides see writes */
	bool have_kernarg, have_fine;
	hsa_executable_t exe;
	hsa_code_object_reader_t reader;
	void *code;
	bool loaded;
	struct gc_hsa_kernel stamp, gate;
};

/* dlopen, hsa_init, first GPU agent, pools, code object. 0 or -errno; *why says which step. */
int gc_hsa_open(struct gc_hsa *h, char *why, size_t len);
void gc_hsa_close(struct gc_hsa *h);
/* gc_hsa_open or gc_skip() with its reason (-ENOMEM etc.: gc_fail()). */
void gc_hsa_require(struct gc_hsa *h);

/* "HSA_STATUS_ERROR_...: text" for a status. */
const char *gc_hsa_err(const struct gc_hsa *h, hsa_status_t st);

/* Fine-grained system memory the GPU may access, zeroed. NULL on failure. */
void *gc_hsa_alloc_fine(struct gc_hsa *h, size_t size);
void *gc_hsa_alloc_kernarg(struct gc_hsa *h, size_t size);
void gc_hsa_free(struct gc_hsa *h, void *p);

/*
 * One AQL kernel dispatch packet of k (one work-group of GC_HSA_BLOCK) on q
 * with kernarg and completion signal (handle 0: none); barrier sets the
 * packet's barrier bit. Waits for a free slot up to deadline_ns (gc_now_ns
 * clock): -ETIMEDOUT when the queue never drained.
 */
int gc_hsa_dispatch(struct gc_hsa *h, hsa_queue_t *q, const struct gc_hsa_kernel *k,
		    void *kernarg, hsa_signal_t done, bool barrier, uint64_t deadline_ns);

/*
 * Kernarg blocks: gc_hsa_kernarg_stride() bytes each (the larger kernel's
 * kernarg_segment_size, 64-byte aligned), carved by the caller out of one
 * gc_hsa_alloc_kernarg() block. Explicit arguments are written; the hidden
 * ones stay zero (the kernels read only their own arguments and the
 * work-group / work-item ids).
 */
size_t gc_hsa_kernarg_stride(const struct gc_hsa *h);
void gc_hsa_stamp_args(void *kernarg, uint64_t *stamps, uint32_t *counts, uint32_t idx,
		       uint64_t work);
void gc_hsa_gate_args(void *kernarg, volatile uint32_t *flag, uint64_t timeout,
		      uint32_t *result);

/*
 * Waits until signal value == want or deadline_ns passes; re-waits through
 * the spec's "may return before the condition is met". True when reached.
 */
bool gc_hsa_wait_eq(struct gc_hsa *h, hsa_signal_t s, hsa_signal_value_t want,
		    uint64_t deadline_ns, hsa_wait_state_t state);

#endif
