/* SPDX-License-Identifier: MIT */
/*
 * ROCr (HSA runtime) opened at run time, one GPU agent, its code object and
 * AQL dispatches of gc_stamp / gc_gate: shared by hsa_signals and hip_bubbles;
 * the runtime alone and its memory entry points: hsa_pools.
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
 * hsa_ext_amd.h of ROCm >= 6.1 (ROCR-Runtime) documents
 * `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY = 0xA016` as "Timestamp value
 * increase rate, in Hz." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
 * rocm-6.2.2]. Debian's 5.2.3 header lacks it; ROCr then answers
 * HSA_STATUS_ERROR_INVALID_ARGUMENT.
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

/*
 * Memory entry points beyond struct gc_hsa_fn, looked up by gc_hsa_load_mem()
 * only for the binaries that call them (hsa_pools), so that hsa_signals and
 * hip_bubbles keep needing only the symbols they use.
 */
struct gc_hsa_mem_fn {
	hsa_status_t (*amd_agent_memory_pool_get_info)(hsa_agent_t, hsa_amd_memory_pool_t,
						       hsa_amd_agent_memory_pool_info_t, void *);
	hsa_status_t (*amd_memory_lock)(void *, size_t, hsa_agent_t *, int, void **);
	hsa_status_t (*amd_memory_unlock)(void *);
	hsa_status_t (*amd_pointer_info)(const void *, hsa_amd_pointer_info_t *,
					 void *(*)(size_t), uint32_t *, hsa_agent_t **);
	hsa_status_t (*amd_memory_fill)(void *, uint32_t, size_t);
	hsa_status_t (*memory_copy)(void *, const void *, size_t);
	hsa_status_t (*amd_ipc_memory_create)(void *, size_t, hsa_amd_ipc_memory_t *);
	hsa_status_t (*amd_ipc_memory_attach)(const hsa_amd_ipc_memory_t *, size_t, uint32_t,
					      const hsa_agent_t *, void **);
	hsa_status_t (*amd_ipc_memory_detach)(void *);
};

struct gc_hsa_kernel {
	uint64_t object;
	uint32_t kernarg_size, group_size, private_size;
};

struct gc_hsa {
	void *lib;
	struct gc_hsa_fn f;
	struct gc_hsa_mem_fn m; /* gc_hsa_load_mem() */
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
/*
 * The first steps of gc_hsa_open() alone: dlopen, the symbols of struct
 * gc_hsa_fn, hsa_init. No agent picked, no pool, no code object: for binaries
 * that walk the agents themselves. gc_hsa_close() undoes it.
 */
int gc_hsa_open_runtime(struct gc_hsa *h, char *why, size_t len);
/* h->m from the already opened library: 0, or -ENOSYS naming the missing symbol. */
int gc_hsa_load_mem(struct gc_hsa *h, char *why, size_t len);
/* gc_hsa_open or gc_skip() with its reason (-ENOMEM etc.: gc_fail()). */
void gc_hsa_require(struct gc_hsa *h);

/* `HSA_STATUS_ERROR_...: text` for a status. */
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
 * early returns: "A wait operation can spuriously resume at any time sooner
 * than the timeout (for example, due to system or other external factors)
 * even when the condition has not been met." [src ROCm/ROCR-Runtime
 * src/inc/hsa.h @ rocm-5.2.3]. True when reached.
 */
bool gc_hsa_wait_eq(struct gc_hsa *h, hsa_signal_t s, hsa_signal_value_t want,
		    uint64_t deadline_ns, hsa_wait_state_t state);

/* ------------------------------------------- pure helpers (tests/unit/test_hsa_pools.c) */

/* `HSA_STATUS_ERROR_INVALID_AGENT`: the name <hsa/hsa.h> / <hsa/hsa_ext_amd.h> give st, or NULL. */
const char *gc_hsa_status_name(hsa_status_t st);

/* size rounded up to a multiple of granule in *out; false when granule is 0 or the sum wraps. */
bool gc_hsa_round_up(size_t size, size_t granule, size_t *out);

/* out[0..n] = in[0..n) with extra inserted before in[pos] (pos == n appends); pos <= n. */
void gc_hsa_list_with(const hsa_agent_t *in, size_t n, hsa_agent_t extra, size_t pos,
		      hsa_agent_t *out);
bool gc_hsa_agent_in(const hsa_agent_t *list, size_t n, hsa_agent_t a);
/* Both lists hold the same agents, whatever their order and repetitions. */
bool gc_hsa_same_agents(const hsa_agent_t *a, size_t na, const hsa_agent_t *b, size_t nb);

/*
 * What a process attaching an IPC handle is told, as one line of text (an
 * environment variable of a re-executed binary): what to do (a code of the
 * caller's), the KFD node of the GPU to attach for, the allocation's length,
 * the word the memory holds and the word to write, the exporter's handle:
 *     MODE:NODE:LEN:SEEN:WRITE:H0:H1:...:H7
 * MODE, NODE and LEN decimal, the others exactly 8 hex digits.
 */
struct gc_hsa_ipc_spec {
	uint32_t mode;
	uint32_t node;
	uint64_t len;
	uint32_t seen, write;
	hsa_amd_ipc_memory_t handle;
};
#define GC_HSA_IPC_SPEC_MAX 176 /* bytes, NUL included */
/* 0, or -ENOSPC when len is too small. */
int gc_hsa_ipc_spec_format(const struct gc_hsa_ipc_spec *s, char *buf, size_t len);
/* 0, or -EINVAL for anything but exactly that form (*s untouched). */
int gc_hsa_ipc_spec_parse(const char *text, struct gc_hsa_ipc_spec *s);

#endif
