/*
 * hsa_pools@access-never-allowed, predicted from the source (not yet seen on
 * hardware): hsa_amd_agents_allow_access grants an agent that is
 * NEVER_ALLOWED on the buffer's pool and returns HSA_STATUS_SUCCESS.
 *
 * cc -std=c11 -O2 -Wall -Wextra -o repro repro.c -I/opt/rocm/include -L/opt/rocm/lib -lhsa-runtime64
 *
 * hsa_ext_amd.h, hsa_amd_agents_allow_access: "@retval
 * ::HSA_STATUS_ERROR_INVALID_ARGUMENT @p num_agents is 0, or @p agents is
 * NULL, @p flags is not NULL, or attempting to enable access to agent(s)
 * because @p ptr is allocated from an inaccessible pool." [src
 * ROCm/ROCR-Runtime runtime/hsa-runtime/inc/hsa_ext_amd.h @ c7785a6da1c1]
 *
 * The prediction: MemoryRegion::AllowAccess [src ROCm/ROCR-Runtime
 * runtime/hsa-runtime/core/runtime/amd_memory_region.cpp @ c7785a6da1c1]
 * never reads the pool's ACCESS attribute: a GPU agent is added to
 * `whitelist_nodes` and mapped, a CPU agent sets `cpu_in_list`, and the call
 * returns HSA_STATUS_SUCCESS.
 *
 * As the suite does it for gpu0 (HSA_DISABLE_FRAGMENT_ALLOCATOR=1 before
 * hsa_init): the first allocatable global pool, walking the CPU agents then
 * the GPU agents, on which an agent not associated with it is NEVER_ALLOWED,
 * gpu0 being the pool's owner or that agent; the GPUs DISALLOWED_BY_DEFAULT
 * on it are the list, the NEVER_ALLOWED agent put at each position of it, one
 * fresh buffer of 64 KiB (in granules) per call.
 * Exit 1: a call returned HSA_STATUS_SUCCESS (the prediction); 0: every call
 * refused; 2: cannot check (no GPU agent, no such pool, a setup call failed).
 */
#define _POSIX_C_SOURCE 200809L
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXA 64
#define MAXP 16

struct agent {
	hsa_agent_t a;
	hsa_amd_memory_pool_t pool[MAXP];
	unsigned np;
};
static struct agent cpu[MAXA], gpu[MAXA];
static unsigned ncpu, ngpu;

static const char *sn(hsa_status_t st)
{
	const char *s = NULL;

	return hsa_status_string(st, &s) == HSA_STATUS_SUCCESS && s ? s : "(unknown status)";
}

#define OK(call) do { hsa_status_t st_ = (call); if (st_ != HSA_STATUS_SUCCESS) { \
	printf("cannot check: %s: %s\n", #call, sn(st_)); exit(2); } } while (0)

static hsa_status_t add_pool(hsa_amd_memory_pool_t p, void *data)
{
	struct agent *a = data;

	if (a->np < MAXP)
		a->pool[a->np++] = p;
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t add_agent(hsa_agent_t h, void *data)
{
	hsa_device_type_t t;
	struct agent *a;

	(void)data;
	OK(hsa_agent_get_info(h, HSA_AGENT_INFO_DEVICE, &t));
	if ((t != HSA_DEVICE_TYPE_CPU && t != HSA_DEVICE_TYPE_GPU) || ncpu == MAXA || ngpu == MAXA)
		return HSA_STATUS_SUCCESS;
	a = t == HSA_DEVICE_TYPE_CPU ? &cpu[ncpu++] : &gpu[ngpu++];
	a->a = h;
	OK(hsa_amd_agent_iterate_memory_pools(h, add_pool, a));
	return HSA_STATUS_SUCCESS;
}

/* The suite's order: the CPU agents, then the GPU agents. */
static struct agent *at(unsigned i)
{
	return i < ncpu ? &cpu[i] : &gpu[i - ncpu];
}

static hsa_amd_memory_pool_access_t access_of(const struct agent *x, hsa_amd_memory_pool_t p)
{
	hsa_amd_memory_pool_access_t acc;

	OK(hsa_amd_agent_memory_pool_get_info(x->a, p, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, &acc));
	return acc;
}

static int associated(const struct agent *x, hsa_amd_memory_pool_t p)
{
	for (unsigned i = 0; i < x->np; i++)
		if (x->pool[i].handle == p.handle)
			return 1;
	return 0;
}

int main(void)
{
	struct agent *g0 = &gpu[0], *never = NULL;
	hsa_amd_memory_pool_t pool = { 0 };
	hsa_agent_t who[MAXA], list[MAXA + 1];
	unsigned n = 0, accepted = 0, nk = 0;
	size_t granule = 0;

	setenv("HSA_DISABLE_FRAGMENT_ALLOCATOR", "1", 1);
	OK(hsa_init());
	OK(hsa_iterate_agents(add_agent, NULL));
	if (!ngpu)
		return printf("cannot check: no GPU agent (%u CPU agents)\n", ncpu), 2;
	for (unsigned j = 0; j < ncpu + ngpu && !never; j++)
		for (unsigned i = 0; i < at(j)->np && !never; i++) {
			hsa_amd_memory_pool_t p = at(j)->pool[i];
			hsa_amd_segment_t seg;
			bool alloc;

			OK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg));
			OK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED,
							 &alloc));
			for (unsigned k = 0; k < ncpu + ngpu && seg == HSA_AMD_SEGMENT_GLOBAL && alloc &&
					     !never; k++)
				if ((at(j) == g0 || at(k) == g0) && !associated(at(k), p) &&
				    access_of(at(k), p) == HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED)
					never = at(k), pool = p, nk = k;
		}
	if (!never)
		return printf("cannot check: no agent is NEVER_ALLOWED on an allocatable pool "
			      "of gpu0, nor gpu0 on another agent's\n"), 2;
	OK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE,
					 &granule));
	for (unsigned j = 0; j < ngpu; j++)
		if (&gpu[j] != never && access_of(&gpu[j], pool) ==
		    HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT)
			who[n++] = gpu[j].a;
	printf("expected: HSA_STATUS_ERROR_INVALID_ARGUMENT for every list holding the %s agent "
	       "NEVER_ALLOWED on the pool (%u GPUs DISALLOWED_BY_DEFAULT beside it)\n",
	       nk < ncpu ? "CPU" : "GPU", n);
	for (unsigned pos = 0; pos <= n; pos++) {
		size_t size = (64 * 1024 + granule - 1) / granule * granule;
		void *ptr = NULL;
		hsa_status_t st;

		for (unsigned i = 0, j = 0; i <= n; i++)
			list[i] = i == pos ? never->a : who[j++];
		OK(hsa_amd_memory_pool_allocate(pool, size, 0, &ptr));
		st = hsa_amd_agents_allow_access(n + 1, list, NULL, ptr);
		printf("actual: hsa_amd_agents_allow_access(%u agents, NEVER_ALLOWED at %u): %s\n",
		       n + 1, pos, sn(st));
		accepted += st == HSA_STATUS_SUCCESS;
		OK(hsa_amd_memory_pool_free(ptr));
	}
	hsa_shut_down();
	if (accepted)
		printf("the prediction holds: %u of %u grants to a NEVER_ALLOWED agent succeeded\n",
		       accepted, n + 1);
	return accepted ? 1 : 0;
}
