/* SPDX-License-Identifier: MIT */
/*
 * CUPTI activity tracing for the bubbles tests. libcupti is opened at run
 * time (dlopen; the toolkit's lib64 is tried after the loader's path), so a
 * binary built with <cupti.h> starts where CUPTI is missing and skips naming
 * it. Calls go through the table with <cupti.h>'s own types.
 *
 * Records arrive in buffers CUPTI hands back from its own thread, through a
 * callback that takes no user pointer: the collector below is therefore the
 * one piece of process-wide state this helper owns (mutex-protected). Only
 * what the tests read is kept: kernels (start, end, correlation id, graph
 * node id, kind) and driver API calls (start, end, correlation id); runtime
 * API calls and memory copies are counted.
 */
#ifndef GPUCONFORM_GC_CUPTI_H
#define GPUCONFORM_GC_CUPTI_H

#include <cupti.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_CUPTI_FUNCS(X)                                                              \
	X(cuptiActivityEnable) X(cuptiActivityDisable) X(cuptiActivityRegisterCallbacks) \
	X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord)                          \
	X(cuptiActivityGetNumDroppedRecords) X(cuptiGetTimestamp)                       \
	X(cuptiGetResultString) X(cuptiFinalize) X(cuptiGetGraphNodeId)                 \
	X(cuptiSubscribe) X(cuptiUnsubscribe) X(cuptiEnableCallback) X(cuptiEnableDomain)

struct gc_cupti {
	void *lib;
	char path[256];
#define GC_CUPTI_MEMBER(name) __typeof__(name) *name;
	GC_CUPTI_FUNCS(GC_CUPTI_MEMBER)
#undef GC_CUPTI_MEMBER
};

struct gc_cupti_kernel {
	uint64_t start, end;      /* CUPTI's normalised timestamps, ns */
	uint64_t graph_node_id;   /* 0 outside graphs */
	uint32_t correlation_id;
	int kind;                 /* CUPTI_ACTIVITY_KIND_(CONCURRENT_)KERNEL */
};

struct gc_cupti_api {
	uint64_t start, end;
	uint32_t correlation_id;
	uint32_t cbid;
};

/* dlopen and resolve; -ENOENT / -ENOSYS with why[] (the loader's words, the symbol). */
int gc_cupti_open(struct gc_cupti *c, char *why, size_t why_len);
/* Register the buffer callbacks (once per process). 0 or -EIO with why[]. */
int gc_cupti_start(const struct gc_cupti *c, char *why, size_t why_len);
/* cuptiActivityEnable/Disable for each kind of kinds[n]; 0 or -EIO with why[]. */
int gc_cupti_enable(const struct gc_cupti *c, const CUpti_ActivityKind *kinds, size_t n,
		    bool on, char *why, size_t why_len);
/* Flush everything (forced) so every finished record has reached the collector. */
int gc_cupti_flush(const struct gc_cupti *c);

/*
 * Take what the collector holds (the caller frees the arrays) and empty it.
 * dropped: records CUPTI reported dropped since the last take, over every
 * buffer it completed.
 */
struct gc_cupti_take {
	struct gc_cupti_kernel *k;
	size_t nk;
	struct gc_cupti_api *api;
	size_t napi;
	uint64_t dropped;
	uint64_t nruntime;        /* runtime-API records (counted, not kept) */
	uint64_t ncopy;           /* memory-copy records (counted, not kept) */
	uint64_t ncopy_tagged;    /* of them, copies of gc_cupti_tag_bytes bytes */
	uint64_t other;           /* records of kinds not kept (memset...) */
};
void gc_cupti_take(struct gc_cupti_take *t);
void gc_cupti_take_free(struct gc_cupti_take *t);
/*
 * Copies of this many bytes are counted apart (ncopy_tagged): a test's own
 * copies, told from the copy nodes of its graphs by a size nothing else uses.
 * 0 (the default): none. Process-wide, as the collector is.
 */
void gc_cupti_tag_bytes(uint64_t bytes);
/* Bytes of the records the collector holds now (kept until a take). */
size_t gc_cupti_held_bytes(void);

/*
 * Graph node clones. cuGraphInstantiate copies the template's nodes, and a
 * launch's kernel records name the copies (CUpti_ActivityKernel's
 * graphNodeId), not the nodes the caller added. CUPTI's resource callback
 * CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED reports each copy with its original;
 * the watcher keeps (original, copy, copy's id) so that a record can be
 * traced back to the template node, through copies of copies.
 */
struct gc_cupti_clone {
	CUgraphNode original, node;
	uint64_t id;
};

struct gc_cupti_clones {
	const struct gc_cupti *c;
	CUpti_SubscriberHandle sub;
	pthread_mutex_t lock;
	struct gc_cupti_clone *v;
	size_t n, cap;
	uint64_t lost; /* clones not kept (out of memory, or no id) */
};

/* Subscribe and enable the clone callback. 0, or -EIO with why[]. */
int gc_cupti_clones_watch(const struct gc_cupti *c, struct gc_cupti_clones *w, char *why,
			  size_t why_len);
void gc_cupti_clones_stop(struct gc_cupti_clones *w);

/*
 * Every graph node id that stands for template node t: t's own, and the ids
 * of its copies made since clone number `since` (w->n before the graph was
 * instantiated: node handles of freed graphs are reused), transitively; up
 * to max into ids. Returns the count.
 */
size_t gc_cupti_clone_ids(struct gc_cupti_clones *w, size_t since, CUgraphNode t, uint64_t *ids,
			  size_t max);
/* How many clones have been seen (the `since` of a graph about to be instantiated). */
size_t gc_cupti_clones_seen(struct gc_cupti_clones *w);

/* `CUPTI_ERROR_NOT_INITIALIZED (...)` */
const char *gc_cupti_strerror(const struct gc_cupti *c, CUptiResult r, char *buf, size_t len);

#endif
