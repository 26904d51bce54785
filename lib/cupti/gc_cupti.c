/* SPDX-License-Identifier: MIT */
#include "gc_cupti.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"

#ifndef GC_CUDA_DIR
#define GC_CUDA_DIR "/usr/local/cuda"
#endif

#define GC_CUPTI_BUF (4u << 20) /* bytes per activity buffer */

/* The collector: CUPTI's completion callback has no user pointer (see the header). */
static struct {
	pthread_mutex_t lock;
	struct gc_cupti_take t;
	size_t cap_k, cap_api;
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
	uint64_t tag_bytes;
} collector = { .lock = PTHREAD_MUTEX_INITIALIZER };

int gc_cupti_open(struct gc_cupti *c, char *why, size_t why_len)
{
	static const char *const names[] = {
		"libcupti.so.13", "libcupti.so.12", "libcupti.so",
		GC_CUDA_DIR "/lib64/libcupti.so", GC_CUDA_DIR "/extras/CUPTI/lib64/libcupti.so",
	};

	memset(c, 0, sizeof(*c));
	c->lib = gc_dlopen_first(names, sizeof(names) / sizeof(names[0]), RTLD_NOW | RTLD_LOCAL,
				 c->path, sizeof(c->path), why, why_len);
	if (!c->lib)
		return -ENOENT;
#define GC_CUPTI_RESOLVE(name)                                                      \
	c->name = (__typeof__(name) *)dlsym(c->lib, #name);                         \
	if (!c->name) {                                                             \
		snprintf(why, why_len, "%s: no symbol %s", c->path, #name);        \
		return -ENOSYS;                                                     \
	}
	GC_CUPTI_FUNCS(GC_CUPTI_RESOLVE)
#undef GC_CUPTI_RESOLVE
	return 0;
}

const char *gc_cupti_strerror(const struct gc_cupti *c, CUptiResult r, char *buf, size_t len)
{
	const char *s = NULL;

	if (c->cuptiGetResultString)
		c->cuptiGetResultString(r, &s);
	snprintf(buf, len, "%s (%d)", s ? s : "CUPTI error", (int)r);
	return buf;
}

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	void *p = NULL;

	if (posix_memalign(&p, 8, GC_CUPTI_BUF) != 0)
		p = NULL;
	*buf = p;
	*size = p ? GC_CUPTI_BUF : 0;
	*max_records = 0;
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 4096;
	void *p;

	if (n < *cap)
		return true;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

/*
 * The head every version of CUPTI's memory-copy record shares
 * (CUpti_ActivityMemcpy to CUpti_ActivityMemcpy6 alike: kind, copyKind,
 * srcKind, dstKind, flags, then bytes, of which cupti_activity.h says
 * "The number of bytes transferred by the memory copy."), restated so that no
 * deprecated version is named [src zspace/system.cuda-12.6
 * extras/CUPTI/include/cupti_activity.h @ b3d92c837713] (CUDA 12.6.3: the
 * sentence on CUpti_ActivityMemcpy5 and CUpti_ActivityMemcpyPtoP4; CUDA 13's
 * header words it the same on CUpti_ActivityMemcpy6).
 */
struct memcpy_head {
	CUpti_ActivityKind kind;
	uint8_t copy_kind, src_kind, dst_kind, flags;
	uint64_t bytes;
};
_Static_assert(sizeof(CUpti_ActivityKind) == 4 && offsetof(struct memcpy_head, bytes) == 8,
	       "the head as <cupti_activity.h> lays it out");

void gc_cupti_tag_bytes(uint64_t bytes)
{
	pthread_mutex_lock(&collector.lock);
	collector.tag_bytes = bytes;
	pthread_mutex_unlock(&collector.lock);
}

static void keep_record(const CUpti_Activity *rec)
{
	struct gc_cupti_take *t = &collector.t;

	if (rec->kind == CUPTI_ACTIVITY_KIND_KERNEL ||
	    rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
		const CUpti_ActivityKernel10 *k = (const void *)rec;

		if (!grow((void **)&t->k, &collector.cap_k, t->nk, sizeof(*t->k))) {
			t->dropped++;
			return;
		}
		t->k[t->nk++] = (struct gc_cupti_kernel){ k->start, k->end, k->graphNodeId,
							  k->correlationId, (int)rec->kind };
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
		const CUpti_ActivityAPI *a = (const void *)rec;

		if (!grow((void **)&t->api, &collector.cap_api, t->napi, sizeof(*t->api))) {
			t->dropped++;
			return;
		}
		t->api[t->napi++] = (struct gc_cupti_api){ a->start, a->end, a->correlationId,
							   a->cbid };
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
		t->nruntime++;
	} else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
		t->ncopy++;
		t->ncopy_tagged += collector.tag_bytes &&
				    ((const struct memcpy_head *)(const void *)rec)->bytes ==
					    collector.tag_bytes;
	} else {
		t->other++;
	}
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				   size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;

	(void)size;
	pthread_mutex_lock(&collector.lock);
	while (collector.next && collector.next(buf, valid, &rec) == CUPTI_SUCCESS)
		keep_record(rec);
	if (collector.dropped && collector.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
		collector.t.dropped += dropped;
	pthread_mutex_unlock(&collector.lock);
	free(buf);
}

int gc_cupti_start(const struct gc_cupti *c, char *why, size_t why_len)
{
	CUptiResult r;
	char eb[160];

	pthread_mutex_lock(&collector.lock);
	collector.next = c->cuptiActivityGetNextRecord;
	collector.dropped = c->cuptiActivityGetNumDroppedRecords;
	pthread_mutex_unlock(&collector.lock);
	r = c->cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, why_len, "cuptiActivityRegisterCallbacks: %s",
			 gc_cupti_strerror(c, r, eb, sizeof(eb)));
		return -EIO;
	}
	return 0;
}

int gc_cupti_enable(const struct gc_cupti *c, const CUpti_ActivityKind *kinds, size_t n,
		    bool on, char *why, size_t why_len)
{
	char eb[160];

	for (size_t i = 0; i < n; i++) {
		CUptiResult r = on ? c->cuptiActivityEnable(kinds[i]) :
				     c->cuptiActivityDisable(kinds[i]);

		if (r != CUPTI_SUCCESS) {
			snprintf(why, why_len, "cuptiActivity%s(kind %d): %s",
				 on ? "Enable" : "Disable", (int)kinds[i],
				 gc_cupti_strerror(c, r, eb, sizeof(eb)));
			return -EIO;
		}
	}
	return 0;
}

int gc_cupti_flush(const struct gc_cupti *c)
{
	return c->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ?
		       0 :
		       -EIO;
}

void gc_cupti_take(struct gc_cupti_take *t)
{
	pthread_mutex_lock(&collector.lock);
	*t = collector.t;
	memset(&collector.t, 0, sizeof(collector.t));
	collector.cap_k = collector.cap_api = 0;
	pthread_mutex_unlock(&collector.lock);
}

size_t gc_cupti_held_bytes(void)
{
	size_t n;

	pthread_mutex_lock(&collector.lock);
	n = collector.t.nk * sizeof(*collector.t.k) + collector.t.napi * sizeof(*collector.t.api);
	pthread_mutex_unlock(&collector.lock);
	return n;
}

void gc_cupti_take_free(struct gc_cupti_take *t)
{
	free(t->k);
	free(t->api);
	memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ clones */

static void CUPTIAPI clone_seen(void *user, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
				const void *cbdata)
{
	struct gc_cupti_clones *w = user;
	const CUpti_ResourceData *rd = cbdata;
	const CUpti_GraphData *g = rd ? rd->resourceDescriptor : NULL;
	uint64_t id = 0;

	if (dom != CUPTI_CB_DOMAIN_RESOURCE || cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || !g)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->c->cuptiGetGraphNodeId(g->node, &id) != CUPTI_SUCCESS ||
	    !grow((void **)&w->v, &w->cap, w->n, sizeof(*w->v)))
		w->lost++;
	else
		w->v[w->n++] = (struct gc_cupti_clone){ g->originalNode, g->node, id };
	pthread_mutex_unlock(&w->lock);
}

int gc_cupti_clones_watch(const struct gc_cupti *c, struct gc_cupti_clones *w, char *why,
			  size_t why_len)
{
	CUptiResult r;
	char eb[160];

	memset(w, 0, sizeof(*w));
	w->c = c;
	pthread_mutex_init(&w->lock, NULL);
	r = c->cuptiSubscribe(&w->sub, clone_seen, w);
	if (r == CUPTI_SUCCESS)
		r = c->cuptiEnableCallback(1, w->sub, CUPTI_CB_DOMAIN_RESOURCE,
					   CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, why_len, "cuptiSubscribe / cuptiEnableCallback(GRAPHNODE_CLONED): %s",
			 gc_cupti_strerror(c, r, eb, sizeof(eb)));
		return -EIO;
	}
	return 0;
}

void gc_cupti_clones_stop(struct gc_cupti_clones *w)
{
	if (w->sub)
		w->c->cuptiUnsubscribe(w->sub);
	free(w->v);
	pthread_mutex_destroy(&w->lock);
	memset(w, 0, sizeof(*w));
}

size_t gc_cupti_clones_seen(struct gc_cupti_clones *w)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->n;
	pthread_mutex_unlock(&w->lock);
	return n;
}

size_t gc_cupti_clone_ids(struct gc_cupti_clones *w, size_t since, CUgraphNode t, uint64_t *ids,
			  size_t max)
{
	CUgraphNode front[64];
	size_t nf = 0, n = 0;

	if (max && w->c->cuptiGetGraphNodeId(t, &ids[0]) == CUPTI_SUCCESS)
		n = 1;
	front[nf++] = t;
	pthread_mutex_lock(&w->lock);
	while (nf && n < max) { /* breadth-first over the copies of copies */
		CUgraphNode o = front[--nf];

		for (size_t i = since; i < w->n && n < max; i++)
			if (w->v[i].original == o) {
				ids[n++] = w->v[i].id;
				if (nf < sizeof(front) / sizeof(front[0]))
					front[nf++] = w->v[i].node;
			}
	}
	pthread_mutex_unlock(&w->lock);
	return n;
}
