// SPDX-License-Identifier: MIT
/*
 * hsa_pools: the mem and multigpu contracts on ROCr's memory pools
 * (<hsa/hsa_ext_amd.h>): what each agent's pools report, allocate / free and
 * their limits, hsa_amd_agents_allow_access with a bad agent in its list,
 * hsa_amd_memory_lock / unlock, and IPC handles across two processes.
 *
 * UNVERIFIED ON HARDWARE: built against Debian 12's ROCm 5.2.3 headers with
 * no AMD GPU; seen only skipping. Every expectation quotes the header sentence
 * it checks. Where the header is silent or says less than the code does, the
 * comment names the ROCR-Runtime source read (public ROCm/ROCR-Runtime copies
 * older and newer than 5.2.3; the 5.2.3 source only where a citation names
 * rocm-5.2.3): read, not run.
 *
 * Dynamic subtests: one per agent, named `gpu<N>` / `cpu<N>` as every stack
 * names its devices (lib/core.h gc_each_device): N a GPU agent's place among
 * the GPU agents in hsa_iterate_agents order (ROCr's ordinal, through
 * gc_device_index() as HIP's), a CPU agent's place among the CPU agents.
 * Each begins by printing the agent's HSA_AMD_AGENT_INFO_DRIVER_NODE_ID
 * ("Internal driver node identifier." [src ROCm/ROCR-Runtime
 * src/inc/hsa_ext_amd.h @ rocm-5.2.3], the KFD topology node), `gpu0: node 1`;
 * messages name agents the same way. Pools belong to agents, so the pool
 * subtests run for CPU agents (the system pools) too; access, lock and IPC
 * run per GPU.
 *
 * How access is observed. hsa_amd_pointer_info's accessible list
 * ("Optionally returns the number and list of agents which can directly
 * access the allocation." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]) is read
 * before and
 * after every grant. ROCr builds it from libhsakmt's record of the GPU nodes
 * a buffer is mapped to (runtime.cpp PtrInfo: hsaKmtQueryPointerInfo's
 * MappedNodes): so it sees what the thunk believes is mapped, not the page
 * tables. The alternatives say less: HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS
 * describes an agent and a pool, not one buffer, and does not change when a
 * buffer is granted; hsa_amd_memory_pool_can_migrate is about migration (and
 * ROCr answers "TODO: not implemented yet." in MemoryRegion::CanMigrate [src ROCm/ROCR-Runtime
 * src/core/runtime/amd_memory_region.cpp @ rocm-5.2.3]);
 * a GPU access
 * to a buffer it was not granted is a GPU page fault, on which ROCr aborts the
 * process (runtime.cpp VMFaultHandler: std::abort()). The accessible list
 * holds GPU agents only (MappedNodes are GPU nodes): a CPU agent's access is
 * not visible in it.
 *
 * Leak check (after each subtest, after giving back what the subtest still
 * holds): HSA_AMD_AGENT_INFO_MEMORY_AVAIL of every GPU must come back to its
 * value before the subtest. How honest: ROCr answers it with
 * hsaKmtAvailableMemory (KFD's AMDKFD_IOC_AVAILABLE_MEMORY) plus what its own
 * caches hold (amd_gpu_agent.cpp GetInfo, read): KFD counts this GPU's VRAM
 * only, in 2 MiB steps, and for every process on the machine; system-pool
 * allocations, locked host memory and IPC imports are invisible to it, a
 * leak under 2 MiB may hide, and another process allocating VRAM meanwhile
 * fails it (as in kfd_mem). Debian's 5.2.3 header does not define the
 * attribute (newer ROCR-Runtime headers do); a runtime that rejects it
 * leaves only the statuses of this binary's own frees checked, and setup says
 * so per GPU. The fixture sets HSA_DISABLE_FRAGMENT_ALLOCATOR=1 before
 * hsa_init: otherwise ROCr sub-allocates VRAM from blocks it keeps after a
 * free (amd_memory_region.cpp BlockAllocator), so a freed pointer stays
 * known to ROCr and grants are shared by the block (AllowAccess: "Make
 * accessibility sticky for fragments since this will satisfy the union of
 * accessible agents between the fragments in the block." [src ROCm/ROCR-Runtime
 * src/core/runtime/amd_memory_region.cpp @ rocm-5.2.3]). ROCr's copy engines start on first
 * use: setup fills and
 * copies once per GPU before any snapshot.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"
#include "gc_hsa.h"
#include "io.h"
#include "measure.h"

/*
 * Newer hsa_ext_amd.h (ROCR-Runtime), HSA_AMD_AGENT_INFO_MEMORY_AVAIL (0xA015):
 * "Queries the amount of memory available in bytes accross all global pools
 * owned by the agent." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
 * rocm-5.3.0] Debian's 5.2.3 header lacks it.
 */
#define AGENT_INFO_MEMORY_AVAIL 0xA015

#define MAX_AGENTS 32
#define MAX_POOLS 16
#define LIFE_SIZE (64 * KiB)
#define HOST_SIZE (64 * KiB)
#define IPC_SIZE (2 * MiB)
#define SETTLE_MS 2000u
#define CHILD_TIMEOUT_MS 120000u
#define IPC_ENV "GPUCONFORM_HSA_IPC_CHILD"
#define FRAG_ENV "HSA_DISABLE_FRAGMENT_ALLOCATOR"

/* A distinct word for every place data is written. */
#define SEED_WARM 0x3a3a0001u
#define SEED_LIFE 0x1fe00001u
#define SEED_HOST 0x1fe00002u
#define SEED_LOCK 0x10c40001u
#define SEED_IPC_PARENT 0x1bc00001u
#define SEED_IPC_CHILD 0x1bc00002u

struct pool {
	hsa_amd_memory_pool_t p;
	hsa_amd_segment_t seg;
	uint32_t flags;     /* GLOBAL_FLAGS (global segment only) */
	bool alloc;         /* RUNTIME_ALLOC_ALLOWED */
	bool all;           /* ACCESSIBLE_BY_ALL */
	size_t size, granule, align, max; /* the last three where alloc */
};

struct agent {
	hsa_agent_t a;
	hsa_device_type_t type;
	hsa_profile_t profile;
	uint32_t node;      /* HSA_AMD_AGENT_INFO_DRIVER_NODE_ID */
	unsigned place;     /* among the agents of its type, in hsa_iterate_agents order */
	char name[64];
	unsigned n_pools;
	struct pool pools[MAX_POOLS];
	bool have_avail;    /* HSA_AMD_AGENT_INFO_MEMORY_AVAIL answered */
	uint64_t avail;     /* its value before the running subtest */
};

/* Pool memory or a host range a subtest holds; its give-back is deferred when it is taken. */
enum held_kind { HELD_POOL, HELD_MAP };
struct held {
	struct pools_fx *fx;
	enum held_kind kind;
	void *p;
	size_t size;
	bool live;   /* allocated or mapped, not given back yet */
	bool locked; /* HELD_MAP: locked, not unlocked since */
};

struct pools_fx {
	struct gc_hsa h;
	unsigned n_cpus, n_gpus;
	struct agent cpus[MAX_AGENTS], gpus[MAX_AGENTS];
};

/* ------------------------------------------------------------ names */

static const char *st_name(hsa_status_t st, char *buf, size_t len)
{
	const char *n = gc_hsa_status_name(st);

	if (n)
		return n;
	snprintf(buf, len, "hsa_status_t 0x%x", (unsigned)st);
	return buf;
}

/* A status's name, for one message (the buffer lives as long as the enclosing block). */
#define SN(st) st_name((st), (char[40]){ 0 }, 40)

/* `gpu<N>` / `cpu<N>`: the agent's dynamic subtest name (each_agent()). */
static const char *agent_label(const struct agent *a, char *buf, size_t len)
{
	if (a->type == HSA_DEVICE_TYPE_GPU)
		return gc_device_name((int)a->place, buf, len);
	snprintf(buf, len, "cpu%u", a->place);
	return buf;
}

#define LABEL(a) agent_label((a), (char[24]){ 0 }, 24)

static struct agent *agent_at(struct pools_fx *fx, unsigned i)
{
	return i < fx->n_cpus ? &fx->cpus[i] : &fx->gpus[i - fx->n_cpus];
}

static const struct agent *agent_of(struct pools_fx *fx, hsa_agent_t h)
{
	for (unsigned i = 0; i < fx->n_cpus + fx->n_gpus; i++)
		if (agent_at(fx, i)->a.handle == h.handle)
			return agent_at(fx, i);
	return NULL;
}

/* `[gpu1, cpu0, 0x0]`: an agent list as the suite names its members. */
static const char *agents_str(struct pools_fx *fx, const hsa_agent_t *l, size_t n, char *buf,
			      size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		const struct agent *a = agent_of(fx, l[i]);
		int w = a ? snprintf(buf + used, len - used, "%s%s", i ? ", " : "[", LABEL(a))
			  : snprintf(buf + used, len - used, "%s0x%" PRIx64, i ? ", " : "[",
				     l[i].handle);

		used += w > 0 ? (size_t)w : 0;
	}
	if (used < len)
		snprintf(buf + used, len - used, "%s]", n ? "" : "[");
	return buf;
}

#define AGENTS(fx, l, n) agents_str((fx), (l), (n), (char[256]){ 0 }, 256)

/* ------------------------------------------------------- what is held */

static void warn_give_back(const void *p, hsa_status_t st)
{
	if (st != HSA_STATUS_SUCCESS)
		gc_warn("giving back %p: %s", p, SN(st));
}

/* Unlock, then free or unmap, whatever is still held (no check); then the record. */
static void held_give_back(void *arg)
{
	struct held *h = arg;

	if (h->locked)
		warn_give_back(h->p, h->fx->h.m.amd_memory_unlock(h->p));
	if (h->live && h->kind == HELD_POOL)
		warn_give_back(h->p, h->fx->h.f.amd_memory_pool_free(h->p));
	else if (h->live)
		munmap(h->p, h->size);
	free(h);
}

/* An empty record whose give-back runs when the (dynamic) subtest ends, however it ends. */
static struct held *held_new(struct pools_fx *fx, enum held_kind kind, size_t size)
{
	struct held *h = gc_defer_calloc(sizeof(*h), held_give_back);

	*h = (struct held){ .fx = fx, .kind = kind, .size = size };
	return h;
}

static void *pool_alloc(struct pools_fx *fx, const struct pool *p, size_t size)
{
	void *ptr = NULL;
	hsa_status_t st = fx->h.f.amd_memory_pool_allocate(p->p, size, 0, &ptr);

	gc_assert_f(st == HSA_STATUS_SUCCESS && ptr, "hsa_amd_memory_pool_allocate(%zu bytes): %s",
		    size, SN(st));
	return ptr;
}

/* hsa_amd_memory_pool_free of a pointer allocate returned: `HSA_STATUS_SUCCESS`. */
static void pool_free(struct pools_fx *fx, void *ptr)
{
	hsa_status_t st = fx->h.f.amd_memory_pool_free(ptr);

	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_pool_free(%p): %s", ptr, SN(st));
}

/* pool_alloc(), held: freed at the scope's end unless pool_drop() freed it. */
static struct held *pool_hold(struct pools_fx *fx, const struct pool *p, size_t size)
{
	struct held *h = held_new(fx, HELD_POOL, size);

	h->p = pool_alloc(fx, p, size);
	h->live = true;
	return h;
}

static void pool_drop(struct pools_fx *fx, struct held *h)
{
	h->live = false;
	pool_free(fx, h->p);
}

/* A call that should have failed allocated: give it back, the caller reports it. */
static void free_unexpected(struct pools_fx *fx, hsa_status_t st, void *ptr)
{
	if (st == HSA_STATUS_SUCCESS && ptr)
		fx->h.f.amd_memory_pool_free(ptr);
}

static void *host_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	gc_assert_f(p != MAP_FAILED, "mmap(%zu): %s", size, strerror(errno));
	return p;
}

/* host_map(), held: unmapped (and unlocked) at the scope's end unless host_drop() was called. */
static struct held *host_hold(struct pools_fx *fx, size_t size)
{
	struct held *h = held_new(fx, HELD_MAP, size);

	h->p = host_map(size);
	h->live = true;
	return h;
}

static void host_drop(struct held *h)
{
	h->live = false;
	munmap(h->p, h->size);
}

/* hsa_amd_memory_lock of the whole range; a success left locked is unlocked at the scope's end. */
static hsa_status_t lock(struct pools_fx *fx, struct held *m, hsa_agent_t *agents, int n,
			 void **agent_ptr)
{
	hsa_status_t st = fx->h.m.amd_memory_lock(m->p, m->size, agents, n, agent_ptr);

	if (st == HSA_STATUS_SUCCESS)
		m->locked = true;
	return st;
}

static hsa_status_t unlock(struct pools_fx *fx, struct held *m)
{
	m->locked = false;
	return fx->h.m.amd_memory_unlock(m->p);
}

/* ------------------------------------------------------- pointer info */

struct view {
	hsa_status_t st;
	hsa_amd_pointer_info_t info;
	uint32_t n;                     /* accessible agents kept (at most MAX_AGENTS) */
	hsa_agent_t who[MAX_AGENTS];
};

/* ROCr allocates the accessible list with this; never NULL for an empty list. */
static void *alloc_list(size_t n)
{
	return malloc(n ? n : 1);
}

static void view_of(struct pools_fx *fx, const void *p, struct view *v)
{
	hsa_agent_t *list = NULL;
	uint32_t n = 0;

	memset(v, 0, sizeof(*v));
	v->info.size = sizeof(v->info);
	v->st = fx->h.m.amd_pointer_info(p, &v->info, alloc_list, &n, &list);
	if (v->st == HSA_STATUS_SUCCESS && list) {
		v->n = n < MAX_AGENTS ? n : MAX_AGENTS;
		memcpy(v->who, list, v->n * sizeof(list[0]));
	}
	free(list);
}

static void view_ok(const struct view *v, const void *p)
{
	gc_assert_f(v->st == HSA_STATUS_SUCCESS, "hsa_amd_pointer_info(%p): %s", p, SN(v->st));
}

static const char *ptr_type(hsa_amd_pointer_type_t t)
{
	switch (t) {
	case HSA_EXT_POINTER_TYPE_UNKNOWN:
		return "UNKNOWN";
	case HSA_EXT_POINTER_TYPE_HSA:
		return "HSA";
	case HSA_EXT_POINTER_TYPE_LOCKED:
		return "LOCKED";
	case HSA_EXT_POINTER_TYPE_GRAPHICS:
		return "GRAPHICS";
	case HSA_EXT_POINTER_TYPE_IPC:
		return "IPC";
	}
	return "an unnamed type";
}

/* ------------------------------------------------------------- data */

static hsa_status_t fill(struct gc_hsa *h, void *p, size_t bytes, uint32_t word)
{
	return h->m.amd_memory_fill(p, word, bytes / sizeof(uint32_t));
}

static size_t first_other(const uint32_t *w, size_t n, uint32_t want)
{
	for (size_t i = 0; i < n; i++)
		if (w[i] != want)
			return i;
	return n;
}

/*
 * hsa_memory_copy of bytes at p into host memory (ROCr pins the host side for
 * the copy: runtime.cpp locked_copy, read not run); every word must be want.
 */
static void expect_words(struct pools_fx *fx, const void *p, size_t bytes, uint32_t want,
			 const char *what)
{
	struct held *hm = host_hold(fx, bytes);
	uint32_t *host = hm->p;
	size_t n = bytes / sizeof(uint32_t), i;
	hsa_status_t st = fx->h.m.memory_copy(host, p, bytes);

	gc_check_f(st == HSA_STATUS_SUCCESS, "%s: hsa_memory_copy to the host: %s", what, SN(st));
	i = st == HSA_STATUS_SUCCESS ? first_other(host, n, want) : n;
	gc_check_f(i == n, "%s: word %zu of %zu is 0x%08" PRIx32 ", want 0x%08" PRIx32, what, i, n,
		   host[i], want);
	host_drop(hm);
}

/* ------------------------------------------------------ agent and pools */

static hsa_amd_memory_pool_access_t access_of(struct pools_fx *fx, const struct agent *a,
					      const struct pool *p)
{
	hsa_amd_memory_pool_access_t acc = HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED;
	hsa_status_t st = fx->h.m.amd_agent_memory_pool_get_info(a->a, p->p,
		HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, &acc);

	/* hsa_amd_agent_memory_pool_get_info documents `HSA_STATUS_SUCCESS` only. */
	gc_assert_f(st == HSA_STATUS_SUCCESS, "ACCESS of %s to a pool: %s", LABEL(a), SN(st));
	return acc;
}

static bool associated(const struct agent *a, const struct pool *p)
{
	for (unsigned i = 0; i < a->n_pools; i++)
		if (a->pools[i].p.handle == p->p.handle)
			return true;
	return false;
}

static bool is_global_alloc(const struct pool *p)
{
	return p->seg == HSA_AMD_SEGMENT_GLOBAL && p->alloc;
}

/* The GPU's own coarse-grained allocatable pool (its VRAM), or NULL. */
static const struct pool *vram_pool(const struct agent *g)
{
	for (unsigned i = 0; i < g->n_pools; i++)
		if (is_global_alloc(&g->pools[i]) &&
		    (g->pools[i].flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED))
			return &g->pools[i];
	return NULL;
}

static size_t granules(const struct pool *p, size_t want)
{
	size_t size = 0;

	gc_assert_f(gc_hsa_round_up(want, p->granule, &size), "%zu bytes in granules of %zu",
		    want, p->granule);
	return size;
}

/* ----------------------------------------------------------- per agent */

/* The agents as lib/core.h's device lists, named as agent_label() names them. */
struct agent_call {
	void (*body)(struct pools_fx *fx, struct agent *a);
	struct pools_fx *fx;
};

static long cpu_place(const void *a, size_t i)
{
	(void)a;
	return (long)i;
}

/* The stack's own id, printed as each dynamic subtest begins: `gpu0: node 1`. */
static const char *agent_node(const void *a, char *buf, size_t len)
{
	snprintf(buf, len, "node %" PRIu32, ((const struct agent *)a)->node);
	return buf;
}

static void agent_run(void *ctx, const void *a)
{
	const struct agent_call *k = ctx;

	k->body(k->fx, (struct agent *)a); /* fx->cpus[i] / fx->gpus[i], not const */
}

static void each_agent(struct pools_fx *fx, bool cpus_too,
		       void (*body)(struct pools_fx *fx, struct agent *a))
{
	struct agent_call k = { body, fx };
	struct gc_devices cpus = { fx->cpus, fx->n_cpus, sizeof(fx->cpus[0]), cpu_place,
				   agent_node, "cpu" };
	struct gc_devices gpus = gc_runtime_devices(fx->gpus, (int)fx->n_gpus,
						    sizeof(fx->gpus[0]), -1);

	gpus.id = agent_node;

	if (cpus_too)
		gc_each_device(&cpus, agent_run, &k);
	gc_each_device(&gpus, agent_run, &k);
}

/* A subtest whose body runs once per agent (cpus_too) or per GPU, as `cpu<N>` / `gpu<N>`. */
#define AGENT_SUBTEST(fn, cpus_too, fx, a)                                      \
	static void fn##__one(struct pools_fx *fx, struct agent *a);             \
	static void fn(void *data)                                               \
	{                                                                        \
		each_agent(data, cpus_too, fn##__one);                           \
	}                                                                        \
	static void fn##__one(struct pools_fx *fx, struct agent *a)

/* ------------------------------------------------------------ pool-info */

static void pool_own_rules(struct pools_fx *fx, const struct agent *ag, const struct pool *p,
			   unsigned i)
{
	const char *l = LABEL(ag);

	/*
	 * RUNTIME_ALLOC_ALLOWED: "The value of this flag is always false for
	 * memory pools in the group and private segments." [src
	 * ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
	 */
	if (p->seg == HSA_AMD_SEGMENT_GROUP || p->seg == HSA_AMD_SEGMENT_PRIVATE)
		gc_check_f(!p->alloc, "%s pool %u (segment %d): RUNTIME_ALLOC_ALLOWED is true", l,
			   i, (int)p->seg);
	if (p->seg == HSA_AMD_SEGMENT_GLOBAL) {
		/*
		 * FINE_GRAINED: "If this flag is set, then
		 * ::HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED must not be set."
		 * [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		gc_check_f(!((p->flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) &&
			     (p->flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)),
			   "%s pool %u: both FINE_GRAINED and COARSE_GRAINED (flags 0x%x)", l, i,
			   p->flags);
		/*
		 * hsa_amd_agent_iterate_memory_pools: "A memory pool of fine-grained
		 * type must be associated only with the host." [src ROCm/ROCR-Runtime
		 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		gc_check_f(!(p->flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) ||
			   ag->type == HSA_DEVICE_TYPE_CPU,
			   "%s pool %u is fine-grained (flags 0x%x) and associated with a GPU", l,
			   i, p->flags);
	}
	if (p->alloc) {
		/*
		 * RUNTIME_ALLOC_ALIGNMENT: "The value of this attribute is only
		 * defined if ::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED is true
		 * for this pool, and must be a power of 2." [src ROCm/ROCR-Runtime
		 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		gc_check_f(p->align && !(p->align & (p->align - 1)),
			   "%s pool %u: RUNTIME_ALLOC_ALIGNMENT %zu", l, i, p->align);
		/*
		 * RUNTIME_ALLOC_GRANULE: "The size of a buffer allocated in this pool
		 * is a multiple of the value of this attribute." [src
		 * ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]: not 0.
		 */
		gc_check_f(p->granule > 0, "%s pool %u: RUNTIME_ALLOC_GRANULE 0", l, i);
	}
	/*
	 * ACCESS: "If the memory pool is associated with the agent, or it is of
	 * fined-grained type, the result must not be
	 * HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED." [src ROCm/ROCR-Runtime
	 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
	 */
	gc_check_f(access_of(fx, ag, p) != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED,
		   "%s is NEVER_ALLOWED on its own pool %u", l, i);
}

/* What every other agent may be told about this pool. */
static void pool_other_rules(struct pools_fx *fx, const struct agent *ag, const struct pool *p,
			     unsigned i)
{
	bool fine = p->seg == HSA_AMD_SEGMENT_GLOBAL &&
		    (p->flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);

	for (unsigned j = 0; j < fx->n_cpus + fx->n_gpus; j++) {
		const struct agent *x = agent_at(fx, j);
		hsa_amd_memory_pool_access_t acc;

		if (associated(x, p))
			continue;
		acc = access_of(fx, x, p);
		/*
		 * ACCESS: "If the memory pool is associated with the agent, or it is
		 * of fined-grained type, the result must not be
		 * HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED." [src ROCm/ROCR-Runtime
		 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		gc_check_f(!fine || acc != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED,
			   "%s is NEVER_ALLOWED on fine-grained pool %u of %s", LABEL(x), i,
			   LABEL(ag));
		/*
		 * ACCESS: "If the memory pool is not associated with the agent, and
		 * does not reside in the global segment, the result must be
		 * HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED." [src ROCm/ROCR-Runtime
		 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		gc_check_f(p->seg == HSA_AMD_SEGMENT_GLOBAL ||
			   acc == HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED,
			   "%s has access %d to non-global pool %u of %s", LABEL(x), (int)acc, i,
			   LABEL(ag));
		/*
		 * ACCESSIBLE_BY_ALL: "This memory_pool can be made directly
		 * accessible by all the agents in the system
		 * (::hsa_amd_agent_memory_pool_get_info does not return
		 * ::HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED for any agent)." [src
		 * ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		gc_check_f(!p->all || acc != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED,
			   "%s is NEVER_ALLOWED on pool %u of %s, which is ACCESSIBLE_BY_ALL",
			   LABEL(x), i, LABEL(ag));
	}
}

static hsa_status_t count_pool(hsa_amd_memory_pool_t p, void *data)
{
	(void)p;
	(*(unsigned *)data)++;
	return HSA_STATUS_SUCCESS;
}

/*
 * Contract (hsa_ext_amd.h, the pool and agent-pool attributes): every pool of
 * the agent keeps the promises its attributes make (quoted at each check),
 * to the agent and to every other agent; an invalid agent has no pools.
 */
AGENT_SUBTEST(test_pool_info, true, fx, ag)
{
	const hsa_agent_t zero = { 0 };
	unsigned n = 0;
	hsa_status_t st;

	for (unsigned i = 0; i < ag->n_pools; i++) {
		pool_own_rules(fx, ag, &ag->pools[i], i);
		pool_other_rules(fx, ag, &ag->pools[i], i);
	}
	/*
	 * iterate_memory_pools: "@retval ::HSA_STATUS_ERROR_INVALID_AGENT The
	 * agent is invalid." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
	 * rocm-5.2.3]
	 */
	st = fx->h.f.amd_agent_iterate_memory_pools(zero, count_pool, &n);
	gc_check_f(st == HSA_STATUS_ERROR_INVALID_AGENT && n == 0,
		   "pools of agent handle 0: %s after %u callbacks", SN(st), n);
}

/* ------------------------------------------------------------ lifecycle */

static void lifecycle_pool(struct pools_fx *fx, const struct agent *ag, const struct pool *pl,
			   unsigned i)
{
	size_t size = granules(pl, LIFE_SIZE);
	struct held *m = pool_hold(fx, pl, size);
	void *p = m->p;
	const struct agent *owner;
	struct view v;

	/*
	 * allocate: "The returned base address is aligned to the value of
	 * ::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT in @p memory_pool."
	 * [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
	 */
	gc_check_f((uintptr_t)p % pl->align == 0, "%s pool %u: %p not aligned to %zu", LABEL(ag), i,
		   p, pl->align);
	view_of(fx, p, &v);
	view_ok(&v, p);
	/*
	 * HSA_EXT_POINTER_TYPE_HSA: "Memory was allocated with an HSA memory
	 * allocator." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
	 */
	gc_check_f(v.info.type == HSA_EXT_POINTER_TYPE_HSA, "%s pool %u: pointer type %s",
		   LABEL(ag), i, ptr_type(v.info.type));
	gc_check_f(v.info.sizeInBytes == size, "%s pool %u: sizeInBytes %zu, allocated %zu",
		   LABEL(ag), i, v.info.sizeInBytes, size);
	/*
	 * agentOwner: "Reports an agent which [...] (ie has preferred access to)
	 * the pool in which the allocation was made. When multiple agents share
	 * equal access to a pool (ex: multiple CPU agents, or multi-die GPU
	 * boards) any such agent may be returned." (the elided word is a quoted
	 * owns) [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]: a
	 * GPU pool's owner is that GPU or another
	 * agent the pool is associated with; a system pool's, any CPU agent.
	 */
	owner = agent_of(fx, v.info.agentOwner);
	gc_check_f(owner && (ag->type == HSA_DEVICE_TYPE_GPU ? associated(owner, pl)
						  : owner->type == HSA_DEVICE_TYPE_CPU),
		   "%s pool %u: agentOwner %s", LABEL(ag), i, owner ? LABEL(owner) : "unknown");
	if (ag->type == HSA_DEVICE_TYPE_GPU) {
		/*
		 * hsa_amd_memory_fill: "@brief Sets the first @p count of uint32_t
		 * of the block of memory pointed by @p ptr to the specified @p
		 * value." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
		 */
		hsa_status_t st = fill(&fx->h, p, size, SEED_LIFE);

		gc_check_f(st == HSA_STATUS_SUCCESS, "%s pool %u: hsa_amd_memory_fill: %s",
			   LABEL(ag), i, SN(st));
		if (st == HSA_STATUS_SUCCESS)
			expect_words(fx, p, size, SEED_LIFE, "GPU-filled pool memory");
	} else {
		struct gc_mismatch mm;
		char msg[160];

		/* System memory: the host reads back every byte it wrote. */
		gc_pattern_fill(p, size, 0, SEED_HOST);
		gc_check_f(gc_pattern_check(p, size, 0, SEED_HOST, &mm) < 0, "%s pool %u: %s",
			   LABEL(ag), i, gc_mismatch_str(&mm, msg, sizeof(msg)));
	}
	pool_drop(fx, m);
	view_of(fx, p, &v);
	view_ok(&v, p);
	/*
	 * HSA_EXT_POINTER_TYPE_UNKNOWN: "Memory is not known to the HSA driver.
	 * Unallocated or unlocked system memory." [src ROCm/ROCR-Runtime
	 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
	 */
	gc_check_f(v.info.type == HSA_EXT_POINTER_TYPE_UNKNOWN,
		   "%s pool %u: freed pointer still of type %s", LABEL(ag), i,
		   ptr_type(v.info.type));
}

/*
 * Contract (hsa_amd_memory_pool_allocate / _free, hsa_amd_pointer_info): in
 * every allocatable global pool of the agent, an allocation is aligned,
 * known to ROCr with its size and owner, holds data (GPU pools: filled by
 * the GPU, copied back; system pools: host pattern), frees with
 * HSA_STATUS_SUCCESS and is unknown afterwards.
 */
AGENT_SUBTEST(test_lifecycle, true, fx, ag)
{
	unsigned done = 0;

	for (unsigned i = 0; i < ag->n_pools; i++) {
		if (!is_global_alloc(&ag->pools[i]))
			continue;
		lifecycle_pool(fx, ag, &ag->pools[i], i);
		done++;
	}
	gc_require_f(done, "%s has no allocatable global pool", LABEL(ag));
}

/* ---------------------------------------------------------- granularity */

/*
 * Contract (hsa_amd_memory_pool_allocate): "This value is rounded up to the
 * nearest multiple of ::HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE in @p
 * memory_pool." (size) [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
 * rocm-5.2.3]; what the allocation became is read back as
 * hsa_amd_pointer_info's sizeInBytes (documented as the size of the
 * allocation). Sizes 1, granule - 1, granule + 1, 3 granules - 1.
 */
AGENT_SUBTEST(test_granularity, true, fx, ag)
{
	unsigned done = 0;

	for (unsigned i = 0; i < ag->n_pools; i++) {
		const struct pool *pl = &ag->pools[i];
		size_t sizes[4], n = 0;

		if (!is_global_alloc(pl))
			continue;
		sizes[n++] = 1;
		if (pl->granule > 2)
			sizes[n++] = pl->granule - 1;
		sizes[n++] = pl->granule + 1;
		sizes[n++] = 3 * pl->granule - 1;
		for (size_t k = 0; k < n; k++) {
			struct held *m = pool_hold(fx, pl, sizes[k]);
			void *p = m->p;
			struct view v;

			view_of(fx, p, &v);
			view_ok(&v, p);
			gc_check_f(v.info.sizeInBytes == granules(pl, sizes[k]),
				   "%s pool %u: %zu bytes asked, %zu allocated, granule %zu",
				   LABEL(ag), i, sizes[k], v.info.sizeInBytes, pl->granule);
			pool_drop(fx, m);
		}
		done++;
	}
	gc_require_f(done, "%s has no allocatable global pool", LABEL(ag));
}

/* -------------------------------------------------------- alloc-invalid */

static void alloc_refused(struct pools_fx *fx, const struct pool *pl, size_t size, bool null_ptr,
			  hsa_status_t want, const char *what)
{
	void *p = NULL;
	hsa_status_t st = fx->h.f.amd_memory_pool_allocate(pl->p, size, 0, null_ptr ? NULL : &p);

	free_unexpected(fx, st, p);
	gc_check_f(st == want, "%s: %s, want %s", what, SN(st), SN(want));
}

/*
 * Contract (hsa_amd_memory_pool_allocate, its @retval lines [src
 * ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]): in every pool of
 * the agent
 *  - size 0 or ptr NULL: "@retval ::HSA_STATUS_ERROR_INVALID_ARGUMENT @p ptr
 *    is NULL, or @p size is 0, or flags is not 0.";
 *  - more than ALLOC_MAX_SIZE, or a pool with RUNTIME_ALLOC_ALLOWED false:
 *    "@retval ::HSA_STATUS_ERROR_INVALID_ALLOCATION The host is not allowed
 *    to allocate memory in @p memory_pool, or @p size is greater than the
 *    value of HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE in @p memory_pool.";
 *  - pool handle 0: "@retval ::HSA_STATUS_ERROR_INVALID_MEMORY_POOL The
 *    memory pool is invalid."
 * Nothing is allocated (the leak check; an unexpected success is freed).
 * flags != 0 is not tried: the 5.2.3 header says "Reserved parameter, must be
 * 0.", newer headers define flag bits and no longer say so.
 */
AGENT_SUBTEST(test_alloc_invalid, true, fx, ag)
{
	const struct pool zero_pool = { .p = { 0 } };
	unsigned refused = 0;

	for (unsigned i = 0; i < ag->n_pools; i++) {
		const struct pool *pl = &ag->pools[i];
		char what[96];

		if (!pl->alloc) {
			snprintf(what, sizeof(what), "%s pool %u (not allocatable), 4 KiB",
				 LABEL(ag), i);
			alloc_refused(fx, pl, 4 * KiB, false, HSA_STATUS_ERROR_INVALID_ALLOCATION,
				      what);
			refused++;
			continue;
		}
		snprintf(what, sizeof(what), "%s pool %u, size 0", LABEL(ag), i);
		alloc_refused(fx, pl, 0, false, HSA_STATUS_ERROR_INVALID_ARGUMENT, what);
		snprintf(what, sizeof(what), "%s pool %u, ptr NULL", LABEL(ag), i);
		alloc_refused(fx, pl, pl->granule, true, HSA_STATUS_ERROR_INVALID_ARGUMENT, what);
		if (pl->max < SIZE_MAX) {
			snprintf(what, sizeof(what), "%s pool %u, ALLOC_MAX_SIZE %zu + 1",
				 LABEL(ag), i, pl->max);
			alloc_refused(fx, pl, pl->max + 1, false,
				      HSA_STATUS_ERROR_INVALID_ALLOCATION, what);
		}
	}
	if (!refused)
		gc_info("%s has no pool with RUNTIME_ALLOC_ALLOWED false: that case is not tried",
			LABEL(ag));
	alloc_refused(fx, &zero_pool, 4 * KiB, false,
		      (hsa_status_t)HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "pool handle 0");
}

/* ------------------------------------------------------------- grants */

/* A buffer gpu may be granted: from a pool it is DISALLOWED_BY_DEFAULT on. */
struct grant {
	const struct pool *pool;
	const struct agent *owner;
	hsa_agent_t who[MAX_AGENTS]; /* the GPUs that need a grant (the one under test first) */
	size_t n;
};

/*
 * The GPUs besides skip that are DISALLOWED_BY_DEFAULT on g->pool, appended to
 * g->who: the grantees whose access the accessible list can show (GPUs only).
 */
static void add_disallowed(struct pools_fx *fx, struct grant *g, const struct agent *skip)
{
	for (unsigned j = 0; j < fx->n_gpus; j++) {
		const struct agent *x = &fx->gpus[j];

		if (x == skip || gc_hsa_agent_in(g->who, g->n, x->a) || g->n == MAX_AGENTS)
			continue;
		if (access_of(fx, x, g->pool) == HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT)
			g->who[g->n++] = x->a;
	}
}

/* A system pool (a CPU agent's, preferably coarse-grained) gpu needs a grant for. */
static bool pick_system_grant(struct pools_fx *fx, const struct agent *gpu, struct grant *g)
{
	const uint32_t coarse = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;

	memset(g, 0, sizeof(*g));
	for (unsigned c = 0; c < fx->n_cpus; c++) {
		for (unsigned i = 0; i < fx->cpus[c].n_pools; i++) {
			const struct pool *p = &fx->cpus[c].pools[i];

			if (!is_global_alloc(p) || access_of(fx, gpu, p) !=
			    HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT)
				continue;
			if (!g->pool || ((p->flags & coarse) && !(g->pool->flags & coarse))) {
				g->pool = p;
				g->owner = &fx->cpus[c];
			}
		}
	}
	if (!g->pool)
		return false;
	g->who[g->n++] = gpu->a;
	add_disallowed(fx, g, gpu);
	return true;
}

/*
 * One refused grant on a fresh buffer: list (n agents, the bad one at pos)
 * must fail with a status in ok[], and the accessible list must not change.
 */
static void refused_grant(struct pools_fx *fx, const struct grant *g, const hsa_agent_t *list,
			  size_t n, const hsa_status_t *ok, size_t n_ok)
{
	struct held *m = pool_hold(fx, g->pool, granules(g->pool, LIFE_SIZE));
	void *p = m->p;
	struct view before, after;
	hsa_status_t st;
	bool good = false;

	view_of(fx, p, &before);
	view_ok(&before, p);
	/*
	 * ACCESS: "If the buffer is currently located in a memory pool that is not
	 * associated with the agent, and the value returned [...] is not
	 * HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED, the application still needs to
	 * invoke ::hsa_amd_agents_allow_access in order to gain direct access to
	 * the buffer." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]:
	 * a fresh buffer is not accessible to an agent that is DISALLOWED_BY_DEFAULT.
	 */
	for (size_t i = 0; i < g->n; i++)
		gc_check_f(!gc_hsa_agent_in(before.who, before.n, g->who[i]),
			   "%s can access a fresh buffer of a DISALLOWED_BY_DEFAULT pool",
			   AGENTS(fx, &g->who[i], 1));
	st = fx->h.f.amd_agents_allow_access((uint32_t)n, list, NULL, p);
	for (size_t i = 0; i < n_ok; i++)
		good |= st == ok[i];
	gc_info("hsa_amd_agents_allow_access(%s): %s", AGENTS(fx, list, n), SN(st));
	gc_check_f(good, "hsa_amd_agents_allow_access(%s): %s, want %s%s%s", AGENTS(fx, list, n),
		   SN(st), SN(ok[0]), n_ok > 1 ? " or " : "", n_ok > 1 ? SN(ok[1]) : "");
	view_of(fx, p, &after);
	view_ok(&after, p);
	/* The suite's multigpu contract: a refused grant leaves no agent with access it lacked. */
	gc_check_f(gc_hsa_same_agents(before.who, before.n, after.who, after.n),
		   "after the refused grant to %s the accessible agents went from %s to %s",
		   AGENTS(fx, list, n), AGENTS(fx, before.who, before.n),
		   AGENTS(fx, after.who, after.n));
	pool_drop(fx, m);
}

/*
 * The control: the same agents without the bad one are granted. allow_access:
 * "Upon return, only the listed agents and the agent associated with the
 * buffer's memory pool have direct access to the @p ptr." [src ROCm/ROCR-Runtime
 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
 */
static void control_grant(struct pools_fx *fx, const struct grant *g)
{
	struct held *m = pool_hold(fx, g->pool, granules(g->pool, LIFE_SIZE));
	void *p = m->p;
	hsa_status_t st = fx->h.f.amd_agents_allow_access((uint32_t)g->n, g->who, NULL, p);
	struct view v;

	gc_check_f(st == HSA_STATUS_SUCCESS, "control: hsa_amd_agents_allow_access(%s): %s",
		   AGENTS(fx, g->who, g->n), SN(st));
	view_of(fx, p, &v);
	view_ok(&v, p);
	for (size_t i = 0; i < g->n && st == HSA_STATUS_SUCCESS; i++)
		gc_check_f(gc_hsa_agent_in(v.who, v.n, g->who[i]),
			   "control: %s granted but not among the accessible agents %s",
			   AGENTS(fx, &g->who[i], 1), AGENTS(fx, v.who, v.n));
	for (uint32_t i = 0; i < v.n; i++) {
		const struct agent *x = agent_of(fx, v.who[i]);

		gc_check_f(gc_hsa_agent_in(g->who, g->n, v.who[i]) || (x && associated(x, g->pool)),
			   "control: %s can access a buffer granted only to %s",
			   AGENTS(fx, &v.who[i], 1), AGENTS(fx, g->who, g->n));
	}
	pool_drop(fx, m);
}

/*
 * Contract (multigpu: all-or-nothing): hsa_amd_agents_allow_access with a
 * zeroed agent handle at every position of a list of agents that need the
 * grant (this GPU first, then every other GPU DISALLOWED_BY_DEFAULT on the
 * buffer's pool, a system pool) fails, and no agent gains access: the
 * buffer's accessible list is what it was before the call.
 * The status: hsa_ext_amd.h lists no HSA_STATUS_ERROR_INVALID_AGENT for this
 * function, only INVALID_ARGUMENT (for other causes); ROCr returns
 * INVALID_AGENT (amd_memory_region.cpp AllowAccess: `if (agent == NULL ||
 * !agent->IsValid()) return HSA_STATUS_ERROR_INVALID_AGENT;`, before any
 * mapping, [src ROCm/ROCR-Runtime src/core/runtime/amd_memory_region.cpp @ rocm-5.2.3]).
 * Accepted: INVALID_AGENT (observed in source) or INVALID_ARGUMENT
 * (the header's only argument error). Then the list without the bad agent is
 * granted (control).
 */
AGENT_SUBTEST(test_access_invalid_device, false, fx, gpu)
{
	static const hsa_status_t ok[] = { HSA_STATUS_ERROR_INVALID_AGENT,
					   HSA_STATUS_ERROR_INVALID_ARGUMENT };
	const hsa_agent_t zero = { 0 };
	hsa_agent_t list[MAX_AGENTS + 1];
	struct grant g;

	gc_require_f(pick_system_grant(fx, gpu, &g), "%s is DISALLOWED_BY_DEFAULT on no "
		     "allocatable system pool: there is no grant to withhold", LABEL(gpu));
	gc_info("buffers from a system pool of %s (flags 0x%x); agents needing a grant: %s",
		LABEL(g.owner), g.pool->flags, AGENTS(fx, g.who, g.n));
	for (size_t pos = 0; pos <= g.n; pos++) {
		gc_hsa_list_with(g.who, g.n, zero, pos, list);
		refused_grant(fx, &g, list, g.n + 1, ok, ARRAY_SIZE(ok));
	}
	control_grant(fx, &g);
}

/* A pool and an agent NEVER_ALLOWED on it, one of them this GPU's. */
static bool pick_never(struct pools_fx *fx, const struct agent *gpu, struct grant *g,
		       const struct agent **never)
{
	memset(g, 0, sizeof(*g));
	for (unsigned j = 0; j < fx->n_cpus + fx->n_gpus; j++) {
		const struct agent *o = agent_at(fx, j);

		for (unsigned i = 0; i < o->n_pools; i++) {
			const struct pool *p = &o->pools[i];

			if (!is_global_alloc(p))
				continue;
			for (unsigned k = 0; k < fx->n_cpus + fx->n_gpus; k++) {
				const struct agent *x = agent_at(fx, k);

				if ((o != gpu && x != gpu) || associated(x, p) ||
				    access_of(fx, x, p) != HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED)
					continue;
				g->pool = p;
				g->owner = o;
				*never = x;
				add_disallowed(fx, g, x);
				return true;
			}
		}
	}
	return false;
}

/*
 * Contract (hsa_amd_agents_allow_access): what the header promises is its
 * status for this case, "@retval ::HSA_STATUS_ERROR_INVALID_ARGUMENT @p
 * num_agents is 0, or @p agents is NULL, @p flags is not NULL, or attempting
 * to enable access to agent(s) because @p ptr is allocated from an
 * inaccessible pool." [src ROCm/ROCR-Runtime
 * runtime/hsa-runtime/inc/hsa_ext_amd.h @ c7785a6da1c1]. Its other sentence
 * on the case is an obligation of the caller, not a promise of the runtime:
 * "The caller is responsible for ensuring that each agent in the list must
 * be able to access the memory pool containing @p ptr (using
 * ::hsa_amd_agent_memory_pool_get_info with
 * ::HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS attribute), otherwise error code is
 * returned." [src ROCm/ROCR-Runtime runtime/hsa-runtime/inc/hsa_ext_amd.h @
 * c7785a6da1c1]. An agent NEVER_ALLOWED on the buffer's pool (a CPU agent on
 * a GPU's VRAM where only GPUs may be granted, or this GPU on another
 * agent's pool), at every position among the agents that may be granted:
 * INVALID_ARGUMENT (the retval), and no agent gains access (the suite's
 * multigpu contract). The accessible list shows GPU agents only: for a CPU
 * agent only the status and the other agents' access are checked.
 *
 * A prediction (data/contracts.txt: predicted-broken): ROCr's
 * MemoryRegion::AllowAccess [src ROCm/ROCR-Runtime
 * runtime/hsa-runtime/core/runtime/amd_memory_region.cpp @ c7785a6da1c1]
 * never reads the pool's ACCESS attribute: a GPU agent is added to
 * `whitelist_nodes` and mapped, a CPU agent sets `cpu_in_list` (host access),
 * and the call returns HSA_STATUS_SUCCESS. The check holds the runtime to
 * the retval all the same.
 */
AGENT_SUBTEST(test_access_never_allowed, false, fx, gpu)
{
	static const hsa_status_t ok[] = { HSA_STATUS_ERROR_INVALID_ARGUMENT };
	hsa_agent_t list[MAX_AGENTS + 1];
	const struct agent *never = NULL;
	struct grant g;

	gc_require_f(pick_never(fx, gpu, &g, &never), "no agent is NEVER_ALLOWED on an allocatable "
		     "pool of %s, and %s is NEVER_ALLOWED on no other agent's pool", LABEL(gpu),
		     LABEL(gpu));
	gc_info("%s is NEVER_ALLOWED on a pool of %s; GPUs that may be granted: %s",
		LABEL(never), LABEL(g.owner), AGENTS(fx, g.who, g.n));
	gc_info("prediction (ROCr amd_memory_region.cpp @ c7785a6da1c1): AllowAccess reads no "
		"ACCESS attribute, so the grant succeeds");
	for (size_t pos = 0; pos <= g.n; pos++) {
		gc_hsa_list_with(g.who, g.n, never->a, pos, list);
		refused_grant(fx, &g, list, g.n + 1, ok, ARRAY_SIZE(ok));
	}
}

/* ---------------------------------------------------------------- lock */

static void require_dgpu_lock(const struct agent *gpu)
{
	/*
	 * amd_memory_region.cpp (read, not run) MemoryRegion::Lock: "For APU, any
	 * host pointer is always accessible by the gpu." [src ROCm/ROCR-Runtime
	 * src/core/runtime/amd_memory_region.cpp @ rocm-5.2.3]: full profile returns the
	 * host pointer without registering it, there is no lock to observe.
	 */
	gc_require_f(gpu->profile == HSA_PROFILE_BASE, "%s is a full-profile agent (APU): ROCr "
		     "locks nothing there", LABEL(gpu));
}

static void expect_type(struct pools_fx *fx, const void *p, hsa_amd_pointer_type_t want,
			const char *when)
{
	struct view v;

	view_of(fx, p, &v);
	view_ok(&v, p);
	gc_check_f(v.info.type == want, "%s: pointer type %s, want %s", when, ptr_type(v.info.type),
		   ptr_type(want));
}

/*
 * Contract (hsa_amd_memory_lock / _unlock): a host range locked for this GPU
 * gives HSA_STATUS_SUCCESS and "[...] return a new pointer accessible by the
 * @p agents."; hsa_amd_pointer_info calls it LOCKED ("System memory which has
 * been locked for use with an HSA agent.") with the GPU among its accessible
 * agents; a fill through agent_ptr (the GPU's blit, runtime.cpp FillMemory:
 * "Selects GPU fill for SVM and Locked allocations if a GPU address is given
 * and is mapped." [src ROCm/ROCR-Runtime src/core/runtime/runtime.cpp @
 * rocm-5.2.3]) reaches the host's pages; unlock gives SUCCESS and the range
 * is UNKNOWN again ("Unallocated or unlocked system memory."). Locked with
 * agents NULL and num_agent 0: "If this parameter is NULL and the @p
 * num_agent is 0, all agents in the platform will gain access to the @p
 * host_ptr." Every GPU is accessible. [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
 * rocm-5.2.3]
 */
AGENT_SUBTEST(test_lock_unlock, false, fx, gpu)
{
	struct held *hm = host_hold(fx, HOST_SIZE);
	void *host = hm->p, *aptr = NULL;
	hsa_status_t st;
	struct view v;

	require_dgpu_lock(gpu);
	st = lock(fx, hm, &gpu->a, 1, &aptr);
	gc_assert_f(st == HSA_STATUS_SUCCESS && aptr, "hsa_amd_memory_lock(%s): %s, agent_ptr %p",
		    LABEL(gpu), SN(st), aptr);
	view_of(fx, host, &v);
	view_ok(&v, host);
	gc_check_f(v.info.type == HSA_EXT_POINTER_TYPE_LOCKED, "locked range: pointer type %s",
		   ptr_type(v.info.type));
	gc_check_f(gc_hsa_agent_in(v.who, v.n, gpu->a), "locked for %s, accessible agents %s",
		   LABEL(gpu), AGENTS(fx, v.who, v.n));
	st = fill(&fx->h, aptr, HOST_SIZE, SEED_LOCK);
	gc_check_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_fill(agent_ptr): %s", SN(st));
	if (st == HSA_STATUS_SUCCESS) {
		size_t n = HOST_SIZE / sizeof(uint32_t), i = first_other(host, n, SEED_LOCK);

		gc_check_f(i == n, "the host sees word %zu of %zu as 0x%08" PRIx32 " after the "
			   "fill through agent_ptr, want 0x%08" PRIx32, i, n,
			   ((uint32_t *)host)[i], SEED_LOCK);
	}
	st = unlock(fx, hm);
	gc_check_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_unlock: %s", SN(st));
	expect_type(fx, host, HSA_EXT_POINTER_TYPE_UNKNOWN, "after unlock");

	st = lock(fx, hm, NULL, 0, &aptr);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_lock(all agents): %s", SN(st));
	view_of(fx, host, &v);
	view_ok(&v, host);
	for (unsigned i = 0; i < fx->n_gpus; i++)
		gc_check_f(gc_hsa_agent_in(v.who, v.n, fx->gpus[i].a), "locked for all agents, but "
			   "%s is not among the accessible agents %s", LABEL(&fx->gpus[i]),
			   AGENTS(fx, v.who, v.n));
	st = unlock(fx, hm);
	gc_check_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_unlock (all agents): %s", SN(st));
	host_drop(hm);
}

struct lock_null {
	struct gc_hsa *h;
	void *host;
	hsa_agent_t gpu;
};

/* In a forked child: exit 0 when lock with agent_ptr NULL gives INVALID_ARGUMENT. */
static void lock_null_child(void *arg)
{
	struct lock_null *x = arg;
	hsa_status_t st = x->h->m.amd_memory_lock(x->host, HOST_SIZE, &x->gpu, 1, NULL);

	if (st != HSA_STATUS_ERROR_INVALID_ARGUMENT) {
		fprintf(stderr, "hsa_amd_memory_lock(agent_ptr NULL): %s\n", SN(st));
		_exit(1);
	}
	_exit(0);
}

static void lock_refused(struct pools_fx *fx, void *host, size_t size, hsa_agent_t *agents,
			 int n, hsa_status_t want, const char *what)
{
	void *aptr = NULL;
	hsa_status_t st = fx->h.m.amd_memory_lock(host, size, agents, n, &aptr);

	if (st == HSA_STATUS_SUCCESS)
		fx->h.m.amd_memory_unlock(host);
	gc_check_f(st == want, "hsa_amd_memory_lock, %s: %s, want %s", what, SN(st), SN(want));
	if (host)
		expect_type(fx, host, HSA_EXT_POINTER_TYPE_UNKNOWN, what);
}

/*
 * Contract (hsa_amd_memory_lock, its @retval lines [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h
 * @ rocm-5.2.3]): INVALID_ARGUMENT "@p size
 * is 0 or @p host_ptr or @p agent_ptr is NULL or @p agents not NULL but @p
 * num_agent is 0 or @p agents is NULL but @p num_agent is not 0.";
 * INVALID_AGENT "One or more agent in @p agents is invalid." (a zeroed handle
 * before and after this GPU). Nothing is locked: the range stays UNKNOWN.
 * agent_ptr NULL is tried in a forked child: an older ROCr copy stored through
 * agent_ptr before checking it (hsa_ext_amd.cpp: `*agent_ptr = NULL;` first),
 * newer ones check first; the call fails before reaching the KFD, so the
 * child needs no runtime state of its own.
 */
AGENT_SUBTEST(test_lock_invalid, false, fx, gpu)
{
	struct held *hm = host_hold(fx, HOST_SIZE);
	void *host = hm->p;
	struct lock_null x = { &fx->h, host, gpu->a };
	const hsa_agent_t zero = { 0 };
	struct gc_child_status cs;
	hsa_agent_t list[2];
	int r;

	require_dgpu_lock(gpu);
	lock_refused(fx, host, 0, &gpu->a, 1, HSA_STATUS_ERROR_INVALID_ARGUMENT, "size 0");
	lock_refused(fx, NULL, HOST_SIZE, &gpu->a, 1, HSA_STATUS_ERROR_INVALID_ARGUMENT,
		     "host_ptr NULL");
	lock_refused(fx, host, HOST_SIZE, &gpu->a, 0, HSA_STATUS_ERROR_INVALID_ARGUMENT,
		     "agents but num_agent 0");
	lock_refused(fx, host, HOST_SIZE, NULL, 1, HSA_STATUS_ERROR_INVALID_ARGUMENT,
		     "agents NULL, num_agent 1");
	for (size_t pos = 0; pos <= 1; pos++) {
		char what[64];

		gc_hsa_list_with(&gpu->a, 1, zero, pos, list);
		snprintf(what, sizeof(what), "agents %s", AGENTS(fx, list, 2));
		lock_refused(fx, host, HOST_SIZE, list, 2, HSA_STATUS_ERROR_INVALID_AGENT, what);
	}
	r = gc_fork_run(lock_null_child, &x, CHILD_TIMEOUT_MS, &cs);
	gc_assert_f(r == 0, "fork: %s", strerror(-r));
	gc_check_f(cs.fate == GC_CHILD_EXITED && cs.code == 0, "hsa_amd_memory_lock(agent_ptr "
		   "NULL) %s (fate %d, code %d; its stderr says what it returned)",
		   cs.fate == GC_CHILD_SIGNALED ? "crashed the process" : "did not give "
		   "HSA_STATUS_ERROR_INVALID_ARGUMENT", (int)cs.fate, cs.code);
	host_drop(hm);
}

/*
 * Contract (hsa_amd_memory_unlock): it documents HSA_STATUS_SUCCESS and, for a
 * runtime not initialised, NOT_INITIALIZED, nothing else: unlocking a range
 * already unlocked (of host_ptr: "A buffer allocated by C/C++ or OS allocator
 * that was pinned previously via ::hsa_amd_memory_lock or
 * ::hsa_amd_memory_lock_to_pool." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3])
 * returns SUCCESS (ROCr,
 * MemoryRegion::Unlock, returns SUCCESS whatever the thunk says), the range
 * stays UNKNOWN, and it locks and unlocks again normally.
 */
AGENT_SUBTEST(test_unlock_unlocked, false, fx, gpu)
{
	struct held *hm = host_hold(fx, HOST_SIZE);
	void *host = hm->p, *aptr = NULL;
	hsa_status_t st;

	require_dgpu_lock(gpu);
	st = lock(fx, hm, &gpu->a, 1, &aptr);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_lock: %s", SN(st));
	st = unlock(fx, hm);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_unlock: %s", SN(st));
	st = unlock(fx, hm);
	gc_check_f(st == HSA_STATUS_SUCCESS, "second hsa_amd_memory_unlock: %s", SN(st));
	expect_type(fx, host, HSA_EXT_POINTER_TYPE_UNKNOWN, "after the second unlock");
	st = lock(fx, hm, &gpu->a, 1, &aptr);
	gc_check_f(st == HSA_STATUS_SUCCESS, "lock after the double unlock: %s", SN(st));
	if (st == HSA_STATUS_SUCCESS) {
		expect_type(fx, host, HSA_EXT_POINTER_TYPE_LOCKED, "locked again");
		st = unlock(fx, hm);
		gc_check_f(st == HSA_STATUS_SUCCESS, "unlock after the double unlock: %s", SN(st));
	}
	host_drop(hm);
}

/* ----------------------------------------------------------------- IPC */

/* What the attaching process is to do (struct gc_hsa_ipc_spec's mode). */
enum ipc_mode {
	IPC_MODE_SHARE,   /* attach twice, look, write, detach (ipc) */
	IPC_MODE_BAD_LEN, /* attach with a wrong len only (ipc-invalid) */
};

/* What the attaching process found wrong: bits of its exit status. */
enum ipc_fault {
	IPC_ATTACH = 1 << 0,
	IPC_TYPE = 1 << 1,
	IPC_BYTES = 1 << 2,
	IPC_WRITE = 1 << 3,
	IPC_DETACH = 1 << 4,
	IPC_REDETACH = 1 << 5,
	IPC_LEN = 1 << 6,
	IPC_SETUP = 1 << 7,     /* alone: could not start (runtime, agent, spec) */
	IPC_EXEC_FAILED = 255,  /* could not re-execute this binary */
};

static const struct {
	unsigned bit;
	const char *what;
} ipc_faults[] = {
	{ IPC_ATTACH, "hsa_amd_ipc_memory_attach of the handle for the GPU (once, and once "
		      "more) did not return HSA_STATUS_SUCCESS (\"if memory is successfully "
		      "imported\")" },
	{ IPC_TYPE, "hsa_amd_pointer_info of an attached address is not HSA_EXT_POINTER_TYPE_IPC "
		    "(\"Memory has been shared with the local process via ROCr IPC APIs.\")" },
	{ IPC_BYTES, "an attached address did not show the exporter's bytes" },
	{ IPC_WRITE, "hsa_amd_memory_fill through the attached address failed" },
	{ IPC_DETACH, "hsa_amd_ipc_memory_detach of an attached address did not return "
		      "HSA_STATUS_SUCCESS; \"Each returned address is refcounted and requires a "
		      "matching number of calls to hsa_amd_ipc_memory_detach\"" },
	{ IPC_REDETACH, "a detach after the last one was not HSA_STATUS_ERROR_INVALID_ARGUMENT "
			"(\"@p mapped_ptr was not imported with hsa_amd_ipc_memory_attach\")" },
	{ IPC_LEN, "attach with half the length was not HSA_STATUS_ERROR_INVALID_ARGUMENT "
		   "(\"@p len is incorrect\"; len: \"Must be the full length of the shared "
		   "allocation in this version\")" },
};

struct node_query {
	struct gc_hsa *h;
	uint32_t node;
	hsa_agent_t found;
};

static hsa_status_t find_gpu_node(hsa_agent_t a, void *data)
{
	struct node_query *q = data;
	hsa_device_type_t t;
	uint32_t node;

	if (q->h->f.agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) == HSA_STATUS_SUCCESS &&
	    t == HSA_DEVICE_TYPE_GPU &&
	    q->h->f.agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_DRIVER_NODE_ID,
				   &node) == HSA_STATUS_SUCCESS && node == q->node)
		q->found = a;
	return HSA_STATUS_SUCCESS;
}

static hsa_agent_t gpu_by_node(struct gc_hsa *h, uint32_t node)
{
	struct node_query q = { h, node, { 0 } };

	h->f.iterate_agents(find_gpu_node, &q);
	return q.found;
}

/* The attaching process's view of one mapping: its type and bytes. */
static int child_look(struct gc_hsa *h, void *p, const struct gc_hsa_ipc_spec *s,
		      const char *which)
{
	hsa_amd_pointer_info_t info = { .size = sizeof(info) };
	size_t n = s->len / sizeof(uint32_t), i;
	hsa_status_t st = h->m.amd_pointer_info(p, &info, NULL, NULL, NULL);
	uint32_t *host;
	int faults = 0;

	if (st != HSA_STATUS_SUCCESS || info.type != HSA_EXT_POINTER_TYPE_IPC) {
		fprintf(stderr, "ipc child: %s mapping %p: pointer info %s, type %s\n", which, p,
			SN(st), ptr_type(info.type));
		faults |= IPC_TYPE;
	}
	host = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (host == MAP_FAILED) {
		fprintf(stderr, "ipc child: mmap: %s\n", strerror(errno));
		return faults | IPC_BYTES;
	}
	st = h->m.memory_copy(host, p, s->len);
	i = st == HSA_STATUS_SUCCESS ? first_other(host, n, s->seen) : 0;
	if (st != HSA_STATUS_SUCCESS || i != n) {
		fprintf(stderr, "ipc child: %s mapping: copy %s; word %zu of %zu is 0x%08" PRIx32
			", the exporter wrote 0x%08" PRIx32 "\n", which, SN(st), i, n,
			i < n ? host[i] : 0, s->seen);
		faults |= IPC_BYTES;
	}
	munmap(host, s->len);
	return faults;
}

static int child_detach_twice(struct gc_hsa *h, void *a, void *b)
{
	hsa_status_t st;
	int faults = 0;

	if (b && (st = h->m.amd_ipc_memory_detach(b)) != HSA_STATUS_SUCCESS) {
		fprintf(stderr, "ipc child: detach of the second mapping: %s\n", SN(st));
		faults |= IPC_DETACH;
	}
	st = h->m.amd_ipc_memory_detach(a);
	if (st != HSA_STATUS_SUCCESS) {
		fprintf(stderr, "ipc child: detach of the first mapping: %s\n", SN(st));
		return faults | IPC_DETACH;
	}
	if (faults)
		return faults;
	st = h->m.amd_ipc_memory_detach(a);
	if (st != HSA_STATUS_ERROR_INVALID_ARGUMENT) {
		fprintf(stderr, "ipc child: detach of a detached address: %s\n", SN(st));
		faults |= IPC_REDETACH;
	}
	return faults;
}

static int child_wrong_len(struct gc_hsa *h, const struct gc_hsa_ipc_spec *s, hsa_agent_t gpu)
{
	void *c = NULL;
	hsa_status_t st = h->m.amd_ipc_memory_attach(&s->handle, s->len / 2, 1, &gpu, &c);

	if (st == HSA_STATUS_ERROR_INVALID_ARGUMENT)
		return 0;
	fprintf(stderr, "ipc child: attach with len %" PRIu64 " of %" PRIu64 ": %s\n", s->len / 2,
		s->len, SN(st));
	if (st == HSA_STATUS_SUCCESS)
		h->m.amd_ipc_memory_detach(c);
	return IPC_LEN;
}

static int child_share(struct gc_hsa *h, const struct gc_hsa_ipc_spec *s, hsa_agent_t gpu)
{
	void *a = NULL, *b = NULL;
	hsa_status_t st = h->m.amd_ipc_memory_attach(&s->handle, s->len, 1, &gpu, &a);
	int faults = 0;

	if (st != HSA_STATUS_SUCCESS) {
		fprintf(stderr, "ipc child: attach for node %" PRIu32 ": %s\n", s->node, SN(st));
		return IPC_ATTACH;
	}
	/*
 * "If a shared memory handle is attached multiple times in a process each attach may
 * return a different address." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @ rocm-5.2.3]
 */
	st = h->m.amd_ipc_memory_attach(&s->handle, s->len, 1, &gpu, &b);
	if (st != HSA_STATUS_SUCCESS) {
		fprintf(stderr, "ipc child: second attach: %s\n", SN(st));
		faults |= IPC_ATTACH;
		b = NULL;
	}
	faults |= child_look(h, a, s, "first");
	if (b)
		faults |= child_look(h, b, s, "second");
	st = fill(h, a, s->len, s->write);
	if (st != HSA_STATUS_SUCCESS) {
		fprintf(stderr, "ipc child: hsa_amd_memory_fill: %s\n", SN(st));
		faults |= IPC_WRITE;
	}
	return faults | child_detach_twice(h, a, b);
}

/*
 * The attaching process: this binary re-executed with IPC_ENV set (ROCr does
 * not survive fork(); a fresh process initialises its own). Its exit status
 * is a set of enum ipc_fault bits; its stderr says what it saw.
 */
static int ipc_child(const char *text)
{
	struct gc_hsa_ipc_spec s;
	struct gc_hsa h;
	hsa_agent_t gpu;
	char why[512];
	int faults;

	if (gc_hsa_ipc_spec_parse(text, &s)) {
		fprintf(stderr, "ipc child: %s=\"%s\" is not a spec\n", IPC_ENV, text);
		return IPC_SETUP;
	}
	unsetenv(IPC_ENV);
	if (gc_hsa_open_runtime(&h, why, sizeof(why)) || gc_hsa_load_mem(&h, why, sizeof(why))) {
		fprintf(stderr, "ipc child: %s\n", why);
		gc_hsa_close(&h);
		return IPC_SETUP;
	}
	gpu = gpu_by_node(&h, s.node);
	if (!gpu.handle) {
		fprintf(stderr, "ipc child: no GPU agent with node %" PRIu32 "\n", s.node);
		gc_hsa_close(&h);
		return IPC_SETUP;
	}
	faults = s.mode == IPC_MODE_BAD_LEN ? child_wrong_len(&h, &s, gpu)
					    : child_share(&h, &s, gpu);
	gc_hsa_close(&h);
	return faults;
}

struct ipc_exec {
	char **envp;
};

/* In the forked child: become the attaching process (no ROCr call in between). */
static void ipc_exec(void *arg)
{
	const struct ipc_exec *x = arg;
	char *argv[] = { "hsa_pools", NULL };

	execve("/proc/self/exe", argv, x->envp);
	fprintf(stderr, "execve /proc/self/exe: %s\n", strerror(errno));
	_exit(IPC_EXEC_FAILED);
}

/* This process's environment with IPC_ENV=spec (built before fork: no setenv in the child). */
static char **child_env(const char *spec, char *var, size_t var_len)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	gc_assert_f(envp, "calloc");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], IPC_ENV "=", sizeof(IPC_ENV)) != 0)
			envp[k++] = environ[i];
	snprintf(var, var_len, "%s=%s", IPC_ENV, spec);
	envp[k] = var;
	return envp;
}

static void run_attacher(const struct gc_hsa_ipc_spec *s, struct gc_child_status *cs)
{
	char spec[GC_HSA_IPC_SPEC_MAX], var[GC_HSA_IPC_SPEC_MAX + sizeof(IPC_ENV) + 1];
	struct ipc_exec x;
	int r;

	gc_assert_ok(gc_hsa_ipc_spec_format(s, spec, sizeof(spec)));
	x.envp = child_env(spec, var, sizeof(var));
	r = gc_fork_run(ipc_exec, &x, CHILD_TIMEOUT_MS, cs);
	free(x.envp);
	gc_assert_f(r == 0, "fork: %s", strerror(-r));
}

static void judge_attacher(const struct gc_child_status *cs)
{
	if (cs->fate == GC_CHILD_SIGNALED)
		gc_fail("the attaching process died of signal %d", cs->code);
	if (cs->fate == GC_CHILD_TIMED_OUT)
		gc_fail("the attaching process still ran after %u ms and was killed",
			CHILD_TIMEOUT_MS);
	gc_assert_f(cs->code != IPC_EXEC_FAILED, "could not re-execute /proc/self/exe");
	gc_assert_f(cs->code != IPC_SETUP, "the attaching process could not start (its stderr "
		    "says why)");
	for (size_t i = 0; i < ARRAY_SIZE(ipc_faults); i++)
		gc_check_f(!(cs->code & (int)ipc_faults[i].bit), "attaching process: %s",
			   ipc_faults[i].what);
}

/*
 * Share len bytes of p (the whole allocation) and tell the attaching process
 * what to do. hsa_amd_ipc_memory_create(ptr, full length) of an allocation
 * made through ROCr documents HSA_STATUS_SUCCESS ("@retval HSA_STATUS_SUCCESS
 * allocation is prepared for interprocess sharing." [src ROCm/ROCR-Runtime
 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]) or OUT_OF_RESOURCES; either of the other two is a
 * failure here. ROCr shares through libhsakmt's hsaKmtShareMemory, and
 * Debian's libhsakmt 5.2.3 issues ioctl 0xc0204b81 there (disassembled here):
 * AMDKFD_IOC_IPC_EXPORT_HANDLE, one of the ROCm DKMS driver's ioctls that
 * upstream <linux/kfd_ioctl.h> does not define.
 */
static void share(struct pools_fx *fx, const struct agent *gpu, void *p,
		  struct gc_hsa_ipc_spec *s)
{
	hsa_status_t st = fx->h.m.amd_ipc_memory_create(p, s->len, &s->handle);

	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_ipc_memory_create(all %" PRIu64 " bytes of "
		    "a %s VRAM allocation): %s (libhsakmt 5.x shares through a KFD ioctl only the "
		    "ROCm DKMS driver has)", s->len, LABEL(gpu), SN(st));
}

/*
 * Contract (hsa_amd_ipc_memory_create / _attach / _detach), across processes:
 * VRAM of this GPU, filled by the exporter, is shared (see share()); a fresh
 * process (this binary re-executed) attaches the handle for the GPU twice
 * ("If a shared memory handle is attached multiple times in a process each
 * attach may return a different address."; each SUCCESS, each address
 * of type IPC), sees the exporter's bytes through both, writes its own word,
 * detaches both (SUCCESS) and once more (INVALID_ARGUMENT). Then the exporter
 * sees the importer's word (one memory, not a copy) and frees it, after the
 * importer detached ("In general applications should confirm that a shared
 * memory region has been attached (via hsa_amd_ipc_memory_attach) in the
 * remote process prior to releasing that memory in the local process."):
 * SUCCESS, and the pointer is unknown afterwards. Not attached with
 * num_agents 0 ("May be zero if all agents are to be allowed access."): on
 * GPUs without peer access that may rightly be INVALID_ARGUMENT, "@retval
 * HSA_STATUS_ERROR_INVALID_ARGUMENT [...] or some agent for which access was
 * requested can not access the shared memory." [src ROCm/ROCR-Runtime src/inc/hsa_ext_amd.h @
 * rocm-5.2.3]
 */
AGENT_SUBTEST(test_ipc, false, fx, gpu)
{
	const struct pool *vram = vram_pool(gpu);
	struct gc_hsa_ipc_spec s = { .mode = IPC_MODE_SHARE, .node = gpu->node,
				     .seen = SEED_IPC_PARENT, .write = SEED_IPC_CHILD };
	struct gc_child_status cs;
	hsa_status_t st;
	struct held *m;
	void *p;

	gc_require_f(vram, "%s has no coarse-grained allocatable pool (VRAM)", LABEL(gpu));
	s.len = granules(vram, IPC_SIZE);
	m = pool_hold(fx, vram, s.len);
	p = m->p;
	st = fill(&fx->h, p, s.len, SEED_IPC_PARENT);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_memory_fill: %s", SN(st));
	share(fx, gpu, p, &s);
	run_attacher(&s, &cs);
	judge_attacher(&cs);
	if (!(cs.code & (IPC_ATTACH | IPC_WRITE)))
		expect_words(fx, p, s.len, SEED_IPC_CHILD, "exporter after the importer's write");
	pool_drop(fx, m);
	expect_type(fx, p, HSA_EXT_POINTER_TYPE_UNKNOWN, "freed after the importer detached");
}

static void ipc_create_refused(struct pools_fx *fx, void *p, size_t len, bool null_handle,
			       const char *what)
{
	hsa_amd_ipc_memory_t h;
	hsa_status_t st = fx->h.m.amd_ipc_memory_create(p, len, null_handle ? NULL : &h);

	gc_check_f(st == HSA_STATUS_ERROR_INVALID_ARGUMENT,
		   "hsa_amd_ipc_memory_create, %s: %s, want HSA_STATUS_ERROR_INVALID_ARGUMENT",
		   what, SN(st));
}

/* In this process: a handle that is no export, and addresses that are no import. */
static void ipc_local_refusals(struct pools_fx *fx, void *p, size_t len, void *host)
{
	hsa_amd_ipc_memory_t zero;
	void *q = NULL;
	hsa_status_t st;

	memset(&zero, 0, sizeof(zero));
	st = fx->h.m.amd_ipc_memory_attach(&zero, len, 0, NULL, &q);
	if (st == HSA_STATUS_SUCCESS)
		fx->h.m.amd_ipc_memory_detach(q);
	gc_check_f(st == HSA_STATUS_ERROR_INVALID_ARGUMENT, "attach of a zeroed handle: %s",
		   SN(st));
	st = fx->h.m.amd_ipc_memory_detach(p);
	gc_check_f(st == HSA_STATUS_ERROR_INVALID_ARGUMENT, "detach of a pool allocation: %s",
		   SN(st));
	st = fx->h.m.amd_ipc_memory_detach(host);
	gc_check_f(st == HSA_STATUS_ERROR_INVALID_ARGUMENT, "detach of a host mmap: %s", SN(st));
}

/*
 * Contract (hsa_amd_ipc_memory_create / _attach / _detach, their @retval lines):
 *  - create: INVALID_ARGUMENT "@p ptr does not point to the first byte of an
 *    allocation made through ROCr, or len is not the full length of the
 *    allocation or handle is NULL.": handle NULL, a host mmap, ptr one granule
 *    into the allocation, len one granule short. (The ROCr source read,
 *    runtime.cpp IPCCreate, shares the enclosing block of a pointer or length
 *    that does not match an allocation when the block is 2 MiB aligned, and
 *    answers SUCCESS: there the last two checks fail, naming the header
 *    sentence the runtime does not keep.)
 *  - attach of a zeroed handle: INVALID_ARGUMENT "@p handle is not valid, @p
 *    len is incorrect, @p mapped_ptr is NULL, or some agent for which access
 *    was requested can not access the shared memory." (the first cause);
 *  - detach of a pool allocation never attached, and of a host mmap:
 *    INVALID_ARGUMENT "@p mapped_ptr was not imported with
 *    hsa_amd_ipc_memory_attach.";
 *  - in another process, attach of the real handle with half its length:
 *    INVALID_ARGUMENT, the second cause of the same line (len: "Must be the
 *    full length of the shared allocation in this version."; the ROCr source
 *    read, IPCAttach, uses len for fragments only).
 * The allocation is untouched: it frees with SUCCESS. [src ROCm/ROCR-Runtime
 * src/inc/hsa_ext_amd.h @ rocm-5.2.3]
 */
AGENT_SUBTEST(test_ipc_invalid, false, fx, gpu)
{
	const struct pool *vram = vram_pool(gpu);
	struct gc_hsa_ipc_spec s = { .mode = IPC_MODE_BAD_LEN, .node = gpu->node };
	struct gc_child_status cs;
	struct held *m, *hm;
	void *p, *host;

	gc_require_f(vram, "%s has no coarse-grained allocatable pool (VRAM)", LABEL(gpu));
	s.len = granules(vram, IPC_SIZE);
	m = pool_hold(fx, vram, s.len);
	p = m->p;
	hm = host_hold(fx, HOST_SIZE);
	host = hm->p;
	ipc_create_refused(fx, p, s.len, true, "handle NULL");
	ipc_create_refused(fx, host, HOST_SIZE, false, "a host mmap");
	ipc_create_refused(fx, (char *)p + vram->granule, s.len - vram->granule, false,
			   "ptr one granule into the allocation");
	ipc_create_refused(fx, p, s.len - vram->granule, false, "len one granule short");
	ipc_local_refusals(fx, p, s.len, host);
	share(fx, gpu, p, &s);
	run_attacher(&s, &cs);
	judge_attacher(&cs);
	host_drop(hm);
	pool_drop(fx, m);
}

/* ------------------------------------------------------------ fixture */

struct handles {
	size_t n;
	bool overflow;
	uint64_t h[MAX_AGENTS * 2];
};

/* Callbacks only collect: a failed assert must not jump out through ROCr's frames. */
static hsa_status_t collect_agent(hsa_agent_t a, void *data)
{
	struct handles *l = data;

	if (l->n < ARRAY_SIZE(l->h))
		l->h[l->n++] = a.handle;
	else
		l->overflow = true;
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t collect_pool(hsa_amd_memory_pool_t p, void *data)
{
	struct handles *l = data;

	if (l->n < MAX_POOLS)
		l->h[l->n++] = p.handle;
	else
		l->overflow = true;
	return HSA_STATUS_SUCCESS;
}

#define POOL_INFO(fx, p, attr, val)                                                      \
	do {                                                                              \
		hsa_status_t st__ = (fx)->h.f.amd_memory_pool_get_info((p)->p, attr, val); \
		gc_assert_f(st__ == HSA_STATUS_SUCCESS, "%s: %s", #attr, SN(st__));        \
	} while (0)

static void read_pool(struct pools_fx *fx, struct pool *p)
{
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &p->seg);
	if (p->seg == HSA_AMD_SEGMENT_GLOBAL)
		POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &p->flags);
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &p->alloc);
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_SIZE, &p->size);
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL, &p->all);
	if (!p->alloc)
		return;
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE, &p->granule);
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT, &p->align);
	POOL_INFO(fx, p, HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE, &p->max);
}

#define AGENT_INFO(fx, a, attr, val)                                                   \
	do {                                                                            \
		hsa_status_t st__ = (fx)->h.f.agent_get_info(a, (hsa_agent_info_t)(attr), val); \
		gc_assert_f(st__ == HSA_STATUS_SUCCESS, "%s: %s", #attr, SN(st__));      \
	} while (0)

static void read_agent(struct pools_fx *fx, hsa_agent_t h, hsa_device_type_t type)
{
	unsigned *n = type == HSA_DEVICE_TYPE_GPU ? &fx->n_gpus : &fx->n_cpus;
	struct agent *a = type == HSA_DEVICE_TYPE_GPU ? &fx->gpus[*n] : &fx->cpus[*n];
	struct handles pools = { 0 };
	hsa_status_t st;

	a->a = h;
	a->type = type;
	a->place = (*n)++;
	AGENT_INFO(fx, h, HSA_AGENT_INFO_NAME, a->name);
	AGENT_INFO(fx, h, HSA_AGENT_INFO_PROFILE, &a->profile);
	AGENT_INFO(fx, h, HSA_AMD_AGENT_INFO_DRIVER_NODE_ID, &a->node);
	st = fx->h.f.amd_agent_iterate_memory_pools(h, collect_pool, &pools);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_amd_agent_iterate_memory_pools(%s): %s",
		    LABEL(a), SN(st));
	gc_assert_f(!pools.overflow, "%s has more than %d pools", LABEL(a), MAX_POOLS);
	for (size_t i = 0; i < pools.n; i++) {
		a->pools[i].p.handle = pools.h[i];
		read_pool(fx, &a->pools[i]);
	}
	a->n_pools = (unsigned)pools.n;
	a->have_avail = type == HSA_DEVICE_TYPE_GPU &&
			fx->h.f.agent_get_info(h, (hsa_agent_info_t)AGENT_INFO_MEMORY_AVAIL,
					       &a->avail) == HSA_STATUS_SUCCESS;
}

static void find_agents(struct pools_fx *fx)
{
	struct handles all = { 0 };
	hsa_status_t st = fx->h.f.iterate_agents(collect_agent, &all);

	gc_assert_f(st == HSA_STATUS_SUCCESS, "hsa_iterate_agents: %s", SN(st));
	gc_assert_f(!all.overflow, "more than %zu agents", ARRAY_SIZE(all.h));
	for (size_t i = 0; i < all.n; i++) {
		hsa_agent_t h = { all.h[i] };
		hsa_device_type_t type;

		AGENT_INFO(fx, h, HSA_AGENT_INFO_DEVICE, &type);
		if ((type == HSA_DEVICE_TYPE_GPU && fx->n_gpus == MAX_AGENTS) ||
		    (type == HSA_DEVICE_TYPE_CPU && fx->n_cpus == MAX_AGENTS))
			gc_fail("more than %d agents of one type", MAX_AGENTS);
		if (type == HSA_DEVICE_TYPE_GPU || type == HSA_DEVICE_TYPE_CPU)
			read_agent(fx, h, type);
	}
}

/* ROCr's copy and fill engines start on first use: start them before any snapshot. */
static void warm_up(struct pools_fx *fx, struct agent *g)
{
	const struct pool *vram = vram_pool(g);
	size_t size;
	void *p, *host;
	hsa_status_t st;

	if (!vram)
		return;
	size = granules(vram, LIFE_SIZE);
	p = pool_alloc(fx, vram, size);
	host = host_map(size);
	st = fill(&fx->h, p, size, SEED_WARM);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "warm-up fill on %s: %s", LABEL(g), SN(st));
	st = fx->h.m.memory_copy(host, p, size);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "warm-up copy from %s: %s", LABEL(g), SN(st));
	st = fx->h.m.memory_copy(p, host, size);
	gc_assert_f(st == HSA_STATUS_SUCCESS, "warm-up copy to %s: %s", LABEL(g), SN(st));
	munmap(host, size);
	pool_free(fx, p);
}

static void *pools_setup(void)
{
	struct pools_fx *fx = calloc(1, sizeof(*fx));
	char why[512];
	int err;

	gc_assert_f(fx, "calloc");
	/* Each allocation its own KFD allocation (see the top of this file). */
	setenv(FRAG_ENV, "1", 1);
	err = gc_hsa_open_runtime(&fx->h, why, sizeof(why));
	if (!err)
		err = gc_hsa_load_mem(&fx->h, why, sizeof(why));
	if (err) {
		gc_hsa_close(&fx->h);
		free(fx);
		gc_skip("%s", why);
	}
	find_agents(fx);
	if (!fx->n_gpus) {
		unsigned cpus = fx->n_cpus;

		gc_hsa_close(&fx->h);
		free(fx);
		gc_skip("HSA: no GPU agent (%u CPU agent(s))", cpus);
	}
	for (unsigned i = 0; i < fx->n_gpus; i++) {
		struct agent *g = &fx->gpus[i];

		warm_up(fx, g);
		gc_info("%s: %s, %s profile, %u pools; leak check: %s", LABEL(g), g->name,
			g->profile == HSA_PROFILE_FULL ? "full" : "base", g->n_pools,
			g->have_avail ? "HSA_AMD_AGENT_INFO_MEMORY_AVAIL (VRAM, 2 MiB steps)"
				      : "none (no HSA_AMD_AGENT_INFO_MEMORY_AVAIL in this ROCr)");
	}
	return fx;
}

static void pools_teardown(void *data)
{
	struct pools_fx *fx = data;

	gc_hsa_close(&fx->h);
	free(fx);
}

static uint64_t avail_now(struct pools_fx *fx, const struct agent *g)
{
	uint64_t v = 0;

	AGENT_INFO(fx, g->a, AGENT_INFO_MEMORY_AVAIL, &v);
	return v;
}

static void pools_before_each(void *data)
{
	struct pools_fx *fx = data;

	for (unsigned i = 0; i < fx->n_gpus; i++)
		if (fx->gpus[i].have_avail)
			fx->gpus[i].avail = avail_now(fx, &fx->gpus[i]);
}

/* Every GPU's available memory back where it was; re-read for up to SETTLE_MS. */
static void pools_after_each(void *data)
{
	struct pools_fx *fx = data;
	uint64_t t0 = gc_now_ns();
	char msg[1024];
	bool back;

	for (;;) {
		size_t used = 0;

		back = true;
		msg[0] = '\0';
		for (unsigned i = 0; i < fx->n_gpus; i++) {
			const struct agent *g = &fx->gpus[i];
			uint64_t now = g->have_avail ? avail_now(fx, g) : g->avail;
			int w;

			if (now == g->avail)
				continue;
			back = false;
			w = snprintf(msg + used, sizeof(msg) - used, "%s%s: %" PRIu64 " bytes "
				     "available before, %" PRIu64 " now (%+" PRId64 ")",
				     used ? "; " : "", LABEL(g), g->avail, now,
				     (int64_t)(now - g->avail));
			used += w > 0 && (size_t)w < sizeof(msg) - used ? (size_t)w : 0;
		}
		if (back || gc_now_ns() - t0 > SETTLE_MS * 1000000ull)
			break;
		usleep(10000);
	}
	if (!back)
		gc_fail("available memory not back %u ms after giving everything back: %s",
			SETTLE_MS, msg);
}

static const struct gc_fixture fixture = {
	.setup = pools_setup,
	.teardown = pools_teardown,
	.before_each = pools_before_each,
	.after_each = pools_after_each,
};

static const struct gc_subtest subtests[] = {
	{ "pool-info", test_pool_info,
	  "each agent's pools keep their attributes' promises, to it and to every other agent" },
	{ "lifecycle", test_lifecycle,
	  "allocate in every allocatable pool: aligned, known, holds data; free; unknown after" },
	{ "granularity", test_granularity,
	  "allocation sizes come back rounded up to RUNTIME_ALLOC_GRANULE" },
	{ "alloc-invalid", test_alloc_invalid,
	  "size 0, ptr NULL, past ALLOC_MAX_SIZE, not allocatable, pool 0: documented status" },
	{ "access-invalid-device", test_access_invalid_device,
	  "allow_access with a zeroed agent at each position: refused, no agent gains access" },
	{ "access-never-allowed", test_access_never_allowed,
	  "allow_access to an agent NEVER_ALLOWED on the pool: INVALID_ARGUMENT, nothing granted" },
	{ "lock-unlock", test_lock_unlock,
	  "lock a host range for the GPU and for all agents: LOCKED, GPU writes reach it; unlock" },
	{ "lock-invalid", test_lock_invalid,
	  "lock with size 0, NULLs, mismatched agents, a zeroed agent: refused, nothing locked" },
	{ "unlock-unlocked", test_unlock_unlocked,
	  "unlock of an unlocked range: SUCCESS, the range locks again" },
	{ "ipc", test_ipc,
	  "VRAM shared with a fresh process: same bytes both ways, detach, free after detach" },
	{ "ipc-invalid", test_ipc_invalid,
	  "IPC create/attach/detach of what is not a shared allocation: INVALID_ARGUMENT" },
	{ 0 }
};

/* Not GC_MAIN: the IPC subtest re-executes this binary as the attaching process. */
int main(int argc, char **argv)
{
	static const struct gc_test test = {
		.name = "hsa_pools",
		.description = "ROCr memory pools: allocation, access grants, locked host "
			       "memory, IPC",
		.subtests = subtests,
		.fixture = &fixture,
	};
	const char *spec = getenv(IPC_ENV);

	if (spec && *spec)
		return ipc_child(spec);
	return gc_main(&test, argc, argv);
}
