// SPDX-License-Identifier: MIT
/*
 * ROCr opened at run time (gc_hsa.h). UNVERIFIED ON HARDWARE.
 *
 * AQL packet layout and publication follow the HSA Platform System
 * Architecture / Runtime specifications as restated in <hsa/hsa.h>: the
 * packet body is written first, then the 16-bit header (with setup in the
 * next 16 bits) is stored with release semantics, then the doorbell signal
 * gets the packet index (hsa_queue_t's doorbell_signal: "Signal object used
 * by the application to indicate the ID of a packet that is ready to be
 * processed." [src ROCm/ROCR-Runtime src/inc/hsa.h @ rocm-5.2.3]).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "gc_hsa.h"
#include "measure.h"

#ifndef GPUCONFORM_DATA_DIR
#define GPUCONFORM_DATA_DIR "data"
#endif

struct sym {
	const char *name;
	size_t off;
};

#define SYM(name, field) { name, offsetof(struct gc_hsa_fn, field) }
#define MEM(name, field) { name, offsetof(struct gc_hsa_mem_fn, field) }

static const struct sym syms[] = {
	SYM("hsa_init", init), SYM("hsa_shut_down", shut_down),
	SYM("hsa_status_string", status_string), SYM("hsa_system_get_info", system_get_info),
	SYM("hsa_iterate_agents", iterate_agents), SYM("hsa_agent_get_info", agent_get_info),
	SYM("hsa_queue_create", queue_create), SYM("hsa_queue_destroy", queue_destroy),
	SYM("hsa_queue_load_read_index_scacquire", queue_load_read_index_scacquire),
	SYM("hsa_queue_add_write_index_scacq_screl", queue_add_write_index_scacq_screl),
	SYM("hsa_signal_create", signal_create), SYM("hsa_signal_destroy", signal_destroy),
	SYM("hsa_signal_store_screlease", signal_store_screlease),
	SYM("hsa_signal_load_scacquire", signal_load_scacquire),
	SYM("hsa_signal_wait_scacquire", signal_wait_scacquire),
	SYM("hsa_amd_signal_create", amd_signal_create),
	SYM("hsa_amd_agent_iterate_memory_pools", amd_agent_iterate_memory_pools),
	SYM("hsa_amd_memory_pool_get_info", amd_memory_pool_get_info),
	SYM("hsa_amd_memory_pool_allocate", amd_memory_pool_allocate),
	SYM("hsa_amd_memory_pool_free", amd_memory_pool_free),
	SYM("hsa_amd_agents_allow_access", amd_agents_allow_access),
	SYM("hsa_code_object_reader_create_from_memory", code_object_reader_create_from_memory),
	SYM("hsa_code_object_reader_destroy", code_object_reader_destroy),
	SYM("hsa_executable_create_alt", executable_create_alt),
	SYM("hsa_executable_load_agent_code_object", executable_load_agent_code_object),
	SYM("hsa_executable_freeze", executable_freeze),
	SYM("hsa_executable_get_symbol_by_name", executable_get_symbol_by_name),
	SYM("hsa_executable_symbol_get_info", executable_symbol_get_info),
	SYM("hsa_executable_destroy", executable_destroy),
	SYM("hsa_amd_profiling_set_profiler_enabled", amd_profiling_set_profiler_enabled),
	SYM("hsa_amd_profiling_get_dispatch_time", amd_profiling_get_dispatch_time),
};

static const struct sym mem_syms[] = {
	MEM("hsa_amd_agent_memory_pool_get_info", amd_agent_memory_pool_get_info),
	MEM("hsa_amd_memory_lock", amd_memory_lock),
	MEM("hsa_amd_memory_unlock", amd_memory_unlock),
	MEM("hsa_amd_pointer_info", amd_pointer_info),
	MEM("hsa_amd_memory_fill", amd_memory_fill),
	MEM("hsa_memory_copy", memory_copy),
	MEM("hsa_amd_ipc_memory_create", amd_ipc_memory_create),
	MEM("hsa_amd_ipc_memory_attach", amd_ipc_memory_attach),
	MEM("hsa_amd_ipc_memory_detach", amd_ipc_memory_detach),
};

const char *gc_hsa_err(const struct gc_hsa *h, hsa_status_t st)
{
	const char *s = NULL;

	if (h->f.status_string && h->f.status_string(st, &s) == HSA_STATUS_SUCCESS && s)
		return s;
	return "unknown hsa_status_t";
}

/* Every tab[i] of lib into the function table fns: 0, or -ENOSYS naming the first missing. */
static int lookup(void *lib, const struct sym *tab, size_t n, void *fns, char *why, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		void *p = dlsym(lib, tab[i].name);

		if (!p) {
			snprintf(why, len, "%s lacks %s", GC_HSA_LIB, tab[i].name);
			return -ENOSYS;
		}
		memcpy((char *)fns + tab[i].off, &p, sizeof(p));
	}
	return 0;
}

static int load_syms(struct gc_hsa *h, char *why, size_t len)
{
	h->lib = dlopen(GC_HSA_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h->lib) {
		snprintf(why, len, "ROCr not loadable: %s", dlerror());
		return -ENOENT;
	}
	return lookup(h->lib, syms, ARRAY_SIZE(syms), &h->f, why, len);
}

int gc_hsa_load_mem(struct gc_hsa *h, char *why, size_t len)
{
	return lookup(h->lib, mem_syms, ARRAY_SIZE(mem_syms), &h->m, why, len);
}

static hsa_status_t pick_agent(hsa_agent_t a, void *data)
{
	struct gc_hsa *h = data;
	hsa_device_type_t t;

	if (h->f.agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) != HSA_STATUS_SUCCESS)
		return HSA_STATUS_SUCCESS;
	if (t == HSA_DEVICE_TYPE_GPU && !h->gpu.handle)
		h->gpu = a;
	if (t == HSA_DEVICE_TYPE_CPU && !h->cpu.handle)
		h->cpu = a;
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void *data)
{
	struct gc_hsa *h = data;
	hsa_amd_segment_t seg;
	uint32_t flags = 0;
	bool alloc = false;

	h->f.amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
	h->f.amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
	if (seg != HSA_AMD_SEGMENT_GLOBAL || !alloc)
		return HSA_STATUS_SUCCESS;
	h->f.amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
	if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !h->have_kernarg) {
		h->kernarg_pool = p;
		h->have_kernarg = true;
	}
	if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !h->have_fine) {
		h->fine_pool = p;
		h->have_fine = true;
	}
	return HSA_STATUS_SUCCESS;
}

static int read_file(const char *path, void **out, size_t *size)
{
	FILE *f = fopen(path, "rb");
	long n;
	void *p;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -EIO;
	}
	p = malloc((size_t)n);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	if (!p)
		return -EIO;
	*out = p;
	*size = (size_t)n;
	return 0;
}

static int kernel_info(struct gc_hsa *h, const char *name, struct gc_hsa_kernel *k, char *why,
		       size_t len)
{
	hsa_executable_symbol_t s;
	hsa_status_t st = h->f.executable_get_symbol_by_name(h->exe, name, &h->gpu, &s);

	if (st != HSA_STATUS_SUCCESS) {
		snprintf(why, len, "code object: no symbol %s: %s", name, gc_hsa_err(h, st));
		return -ENOENT;
	}
	h->f.executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k->object);
	h->f.executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
					&k->kernarg_size);
	h->f.executable_symbol_get_info(s,
		HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &k->group_size);
	h->f.executable_symbol_get_info(s,
		HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &k->private_size);
	return 0;
}

#define HSA_TRY(call, what)                                                             \
	do {                                                                             \
		hsa_status_t st__ = (call);                                              \
		if (st__ != HSA_STATUS_SUCCESS) {                                        \
			snprintf(why, len, "%s: %s", what, gc_hsa_err(h, st__));         \
			return -EIO;                                                     \
		}                                                                        \
	} while (0)

static int load_code(struct gc_hsa *h, char *why, size_t len)
{
	const char *dir = getenv("GPUCONFORM_DATA_DIR");
	char path[512];
	size_t size = 0;
	int err;

	snprintf(path, sizeof(path), "%s/kernels/gpuconform.%s.hsaco",
		 dir && *dir ? dir : GPUCONFORM_DATA_DIR, h->gpu_name);
	err = read_file(path, &h->code, &size);
	if (err) {
		snprintf(why, len, "%s: %s (no code object for %s; set GPUCONFORM_DATA_DIR)", path,
			 strerror(-err), h->gpu_name);
		return -ENOENT;
	}
	HSA_TRY(h->f.code_object_reader_create_from_memory(h->code, size, &h->reader),
		"hsa_code_object_reader_create_from_memory");
	HSA_TRY(h->f.executable_create_alt(HSA_PROFILE_FULL,
		HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &h->exe), "hsa_executable_create_alt");
	h->loaded = true;
	HSA_TRY(h->f.executable_load_agent_code_object(h->exe, h->gpu, h->reader, NULL, NULL),
		path);
	HSA_TRY(h->f.executable_freeze(h->exe, NULL), "hsa_executable_freeze");
	err = kernel_info(h, "gc_stamp.kd", &h->stamp, why, len);
	return err ? err : kernel_info(h, "gc_gate.kd", &h->gate, why, len);
}

static int find_gpu(struct gc_hsa *h, char *why, size_t len)
{
	HSA_TRY(h->f.iterate_agents(pick_agent, h), "hsa_iterate_agents");
	if (!h->gpu.handle) {
		snprintf(why, len, "HSA: no GPU agent");
		return -ENODEV;
	}
	h->f.agent_get_info(h->gpu, HSA_AGENT_INFO_NAME, h->gpu_name);
	h->f.agent_get_info(h->gpu, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &h->queue_max);
	/* ROCr < 6.1 rejects the attribute: leave 0, the user decides. */
	if (h->f.agent_get_info(h->gpu, (hsa_agent_info_t)GC_HSA_AGENT_INFO_TIMESTAMP_FREQUENCY,
				&h->gpu_ts_hz) != HSA_STATUS_SUCCESS)
		h->gpu_ts_hz = 0;
	HSA_TRY(h->f.amd_agent_iterate_memory_pools(h->cpu.handle ? h->cpu : h->gpu, pick_pool, h),
		"hsa_amd_agent_iterate_memory_pools");
	if (!h->have_kernarg || !h->have_fine) {
		snprintf(why, len, "HSA: no %s system memory pool",
			 h->have_kernarg ? "fine-grained" : "kernarg");
		return -ENODEV;
	}
	return 0;
}

int gc_hsa_open_runtime(struct gc_hsa *h, char *why, size_t len)
{
	hsa_status_t st;
	int err;

	memset(h, 0, sizeof(*h));
	err = load_syms(h, why, len);
	if (err)
		return err;
	st = h->f.init();
	if (st != HSA_STATUS_SUCCESS) {
		snprintf(why, len, "hsa_init(): %s%s", gc_hsa_err(h, st),
			 access("/dev/kfd", F_OK) ? " (/dev/kfd: no such file)" : "");
		return -ENODEV;
	}
	h->inited = true;
	return 0;
}

int gc_hsa_open(struct gc_hsa *h, char *why, size_t len)
{
	int err = gc_hsa_open_runtime(h, why, len);

	if (err)
		return err;
	err = find_gpu(h, why, len);
	return err ? err : load_code(h, why, len);
}

void gc_hsa_close(struct gc_hsa *h)
{
	if (h->loaded)
		h->f.executable_destroy(h->exe);
	if (h->reader.handle)
		h->f.code_object_reader_destroy(h->reader);
	free(h->code);
	if (h->inited)
		h->f.shut_down();
	/* The library stays mapped: ROCr's own threads may still be unwinding. */
	memset(h, 0, sizeof(*h));
}

void gc_hsa_require(struct gc_hsa *h)
{
	char why[512];
	int err = gc_hsa_open(h, why, sizeof(why));

	if (!err)
		return;
	gc_hsa_close(h);
	if (err == -EIO)
		gc_fail("%s", why);
	gc_skip("%s", why);
}

static void *pool_alloc(struct gc_hsa *h, hsa_amd_memory_pool_t pool, size_t size)
{
	void *p = NULL;

	if (h->f.amd_memory_pool_allocate(pool, size, 0, &p) != HSA_STATUS_SUCCESS)
		return NULL;
	if (h->f.amd_agents_allow_access(1, &h->gpu, NULL, p) != HSA_STATUS_SUCCESS) {
		h->f.amd_memory_pool_free(p);
		return NULL;
	}
	memset(p, 0, size);
	return p;
}

void *gc_hsa_alloc_fine(struct gc_hsa *h, size_t size)
{
	return pool_alloc(h, h->fine_pool, size);
}

void *gc_hsa_alloc_kernarg(struct gc_hsa *h, size_t size)
{
	return pool_alloc(h, h->kernarg_pool, size);
}

void gc_hsa_free(struct gc_hsa *h, void *p)
{
	if (p)
		h->f.amd_memory_pool_free(p);
}

static uint16_t packet_header(bool barrier)
{
	return (uint16_t)((HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
		((barrier ? 1 : 0) << HSA_PACKET_HEADER_BARRIER) |
		(HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
		(HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

int gc_hsa_dispatch(struct gc_hsa *h, hsa_queue_t *q, const struct gc_hsa_kernel *k,
		    void *kernarg, hsa_signal_t done, bool barrier, uint64_t deadline_ns)
{
	uint64_t idx = h->f.queue_add_write_index_scacq_screl(q, 1);
	hsa_kernel_dispatch_packet_t *p;
	uint32_t word;

	while (idx - h->f.queue_load_read_index_scacquire(q) >= q->size) {
		if (gc_now_ns() > deadline_ns)
			return -ETIMEDOUT; /* the slot is reserved: the queue is now unusable */
		sched_yield();
	}
	p = (hsa_kernel_dispatch_packet_t *)q->base_address + (idx & (q->size - 1));
	memset((char *)p + 4, 0, sizeof(*p) - 4);
	p->workgroup_size_x = GC_HSA_BLOCK;
	p->workgroup_size_y = p->workgroup_size_z = 1;
	p->grid_size_x = GC_HSA_BLOCK;
	p->grid_size_y = p->grid_size_z = 1;
	p->private_segment_size = k->private_size;
	p->group_segment_size = k->group_size;
	p->kernel_object = k->object;
	p->kernarg_address = kernarg;
	p->completion_signal = done;
	word = packet_header(barrier) |
	       ((uint32_t)1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) << 16;
	__atomic_store_n((uint32_t *)p, word, __ATOMIC_RELEASE);
	h->f.signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)idx);
	return 0;
}

size_t gc_hsa_kernarg_stride(const struct gc_hsa *h)
{
	size_t n = h->stamp.kernarg_size > h->gate.kernarg_size ? h->stamp.kernarg_size
								 : h->gate.kernarg_size;

	return ((n < 32 ? 32 : n) + 63) / 64 * 64;
}

/* gc_stamp(ulong *stamps, uint *counts, uint idx, ulong work): offsets 0, 8, 16, 24. */
void gc_hsa_stamp_args(void *kernarg, uint64_t *stamps, uint32_t *counts, uint32_t idx,
		       uint64_t work)
{
	char *a = kernarg;

	memcpy(a, &stamps, 8);
	memcpy(a + 8, &counts, 8);
	memcpy(a + 16, &idx, 4);
	memcpy(a + 24, &work, 8);
}

/* gc_gate(volatile uint *flag, ulong timeout, uint *result): offsets 0, 8, 16. */
void gc_hsa_gate_args(void *kernarg, volatile uint32_t *flag, uint64_t timeout,
		      uint32_t *result)
{
	char *a = kernarg;

	memcpy(a, &flag, 8);
	memcpy(a + 8, &timeout, 8);
	memcpy(a + 16, &result, 8);
}

bool gc_hsa_wait_eq(struct gc_hsa *h, hsa_signal_t s, hsa_signal_value_t want,
		    uint64_t deadline_ns, hsa_wait_state_t state)
{
	for (;;) {
		/* timeout_hint in the system timestamp's units is only a hint: 1 ms-ish. */
		if (h->f.signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, want, 1000000,
					       state) == want)
			return true;
		if (gc_now_ns() > deadline_ns)
			return h->f.signal_load_scacquire(s) == want;
	}
}

/* ------------------------------------------------------- pure helpers */

#define ST(name) { name, #name }
#define ST_AMD(name) { (hsa_status_t)name, #name } /* hsa_ext_amd.h's own enum */

static const struct {
	hsa_status_t st;
	const char *name;
} status_names[] = {
	ST(HSA_STATUS_SUCCESS), ST(HSA_STATUS_INFO_BREAK), ST(HSA_STATUS_ERROR),
	ST(HSA_STATUS_ERROR_INVALID_ARGUMENT), ST(HSA_STATUS_ERROR_INVALID_QUEUE_CREATION),
	ST(HSA_STATUS_ERROR_INVALID_ALLOCATION), ST(HSA_STATUS_ERROR_INVALID_AGENT),
	ST(HSA_STATUS_ERROR_INVALID_REGION), ST(HSA_STATUS_ERROR_INVALID_SIGNAL),
	ST(HSA_STATUS_ERROR_INVALID_QUEUE), ST(HSA_STATUS_ERROR_OUT_OF_RESOURCES),
	ST(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT), ST(HSA_STATUS_ERROR_RESOURCE_FREE),
	ST(HSA_STATUS_ERROR_NOT_INITIALIZED), ST(HSA_STATUS_ERROR_REFCOUNT_OVERFLOW),
	ST(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS), ST(HSA_STATUS_ERROR_INVALID_INDEX),
	ST(HSA_STATUS_ERROR_INVALID_ISA), ST(HSA_STATUS_ERROR_INVALID_ISA_NAME),
	ST(HSA_STATUS_ERROR_INVALID_CODE_OBJECT), ST(HSA_STATUS_ERROR_INVALID_EXECUTABLE),
	ST(HSA_STATUS_ERROR_FROZEN_EXECUTABLE), ST(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME),
	ST(HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED), ST(HSA_STATUS_ERROR_VARIABLE_UNDEFINED),
	ST(HSA_STATUS_ERROR_EXCEPTION), ST(HSA_STATUS_ERROR_INVALID_CODE_SYMBOL),
	ST(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL), ST(HSA_STATUS_ERROR_INVALID_FILE),
	ST(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER), ST(HSA_STATUS_ERROR_INVALID_CACHE),
	ST(HSA_STATUS_ERROR_INVALID_WAVEFRONT), ST(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP),
	ST(HSA_STATUS_ERROR_INVALID_RUNTIME_STATE), ST(HSA_STATUS_ERROR_FATAL),
	ST_AMD(HSA_STATUS_ERROR_INVALID_MEMORY_POOL),
	ST_AMD(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION),
	ST_AMD(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION), ST_AMD(HSA_STATUS_ERROR_MEMORY_FAULT),
	ST_AMD(HSA_STATUS_CU_MASK_REDUCED),
};

const char *gc_hsa_status_name(hsa_status_t st)
{
	for (size_t i = 0; i < ARRAY_SIZE(status_names); i++)
		if (status_names[i].st == st)
			return status_names[i].name;
	return NULL;
}

bool gc_hsa_round_up(size_t size, size_t granule, size_t *out)
{
	size_t rem;

	if (!granule)
		return false;
	rem = size % granule;
	if (!rem) {
		*out = size;
		return true;
	}
	if (size > SIZE_MAX - (granule - rem))
		return false;
	*out = size + (granule - rem);
	return true;
}

void gc_hsa_list_with(const hsa_agent_t *in, size_t n, hsa_agent_t extra, size_t pos,
		      hsa_agent_t *out)
{
	for (size_t i = 0, j = 0; i <= n; i++)
		out[i] = i == pos ? extra : in[j++];
}

bool gc_hsa_agent_in(const hsa_agent_t *list, size_t n, hsa_agent_t a)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].handle == a.handle)
			return true;
	return false;
}

bool gc_hsa_same_agents(const hsa_agent_t *a, size_t na, const hsa_agent_t *b, size_t nb)
{
	for (size_t i = 0; i < na; i++)
		if (!gc_hsa_agent_in(b, nb, a[i]))
			return false;
	for (size_t i = 0; i < nb; i++)
		if (!gc_hsa_agent_in(a, na, b[i]))
			return false;
	return true;
}

int gc_hsa_ipc_spec_format(const struct gc_hsa_ipc_spec *s, char *buf, size_t len)
{
	size_t used;
	int n;

	n = snprintf(buf, len, "%" PRIu32 ":%" PRIu32 ":%" PRIu64 ":%08" PRIx32 ":%08" PRIx32,
		     s->mode, s->node, s->len, s->seen, s->write);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	used = (size_t)n;
	for (size_t i = 0; i < ARRAY_SIZE(s->handle.handle); i++) {
		n = snprintf(buf + used, len - used, ":%08" PRIx32, s->handle.handle[i]);
		if (n < 0 || (size_t)n >= len - used)
			return -ENOSPC;
		used += (size_t)n;
	}
	return 0;
}

/* The field at *p up to the next ':' or the end; *p moves past the ':'. Empty: -EINVAL. */
static int spec_field(const char **p, const char **start, size_t *n)
{
	const char *colon = strchr(*p, ':');

	*start = *p;
	*n = colon ? (size_t)(colon - *p) : strlen(*p);
	*p = colon ? colon + 1 : *p + *n;
	return *n ? 0 : -EINVAL;
}

static int spec_dec(const char **p, uint64_t max, uint64_t *v)
{
	const char *f;
	uint64_t x = 0;
	size_t n;

	if (spec_field(p, &f, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(f[i] - '0');

		if (d > 9 || x > (max - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static int spec_hex8(const char **p, uint32_t *v)
{
	const char *f;
	uint32_t x = 0;
	size_t n;

	if (spec_field(p, &f, &n) || n != 8)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = f[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
		x = (x << 4) | d;
	}
	*v = x;
	return 0;
}

int gc_hsa_ipc_spec_parse(const char *text, struct gc_hsa_ipc_spec *s)
{
	struct gc_hsa_ipc_spec r;
	const char *p = text;
	uint64_t mode, node;

	memset(&r, 0, sizeof(r));
	if (spec_dec(&p, UINT32_MAX, &mode) || spec_dec(&p, UINT32_MAX, &node) ||
	    spec_dec(&p, UINT64_MAX, &r.len) ||
	    spec_hex8(&p, &r.seen) || spec_hex8(&p, &r.write))
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(r.handle.handle); i++)
		if (spec_hex8(&p, &r.handle.handle[i]))
			return -EINVAL;
	/* Nothing after the last field, not even an empty one (a trailing ':'). */
	if (*p || p[-1] == ':')
		return -EINVAL;
	r.mode = (uint32_t)mode;
	r.node = (uint32_t)node;
	*s = r;
	return 0;
}
