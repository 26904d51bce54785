// SPDX-License-Identifier: MIT
/*
 * nvml_session: the session contract on NVML. nvml.h, of nvmlInit_v2 and of
 * nvmlShutdown: "A reference count of the number of initializations is
 * maintained. Shutdown only occurs when the reference count reaches zero."
 * nvmlShutdown's return list has NVML_ERROR_UNINITIALIZED for a library that
 * has not been successfully initialized, but its text also says "For backwards
 * compatibility, no error is reported if nvmlShutdown() is called more times
 * than nvmlInit()." [src zspace/system.cuda-12.6 include/nvml.h @
 * b3d92c837713] (CUDA 12.6.3). So the UNINITIALIZED that refcount and
 * unpaired-init expect from a shutdown past the count's end is one reading of
 * the header; that sentence reads the other way. A daemon that opens a session
 * per request relies on that count, on thread safety, on the device nodes
 * being released at the outermost shutdown, and on devices found again by UUID
 * in every session.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "devfd.h"
#include "gc_nvml.h"
#include "measure.h"
#include "contract/session.h"
#include "soak.h"
#include "workers.h"

#define DEV_PREFIX "/dev/nvidia"
#define MAX_DEV 16

/* A device as a persistent session sees it: what every per-request answer must equal. */
struct ref_dev {
	char uuid[GC_NVML_UUID_LEN], name[GC_NVML_NAME_LEN], serial[GC_NVML_SERIAL_LEN];
	char bus_id[GC_NVML_BUS_ID_LEN];
	unsigned long long mem_total;
	gc_nvml_ret serial_ret;
};

struct fx {
	struct gc_nvml n;
	unsigned gpus;  /* NVML's count: all the node's GPUs, whatever CUDA_VISIBLE_DEVICES says */
	unsigned count; /* those taken as reference (at most MAX_DEV) */
	struct ref_dev dev[MAX_DEV];
	int fds0; /* device nodes open before any session */
};

static const char *rs(const struct fx *f, gc_nvml_ret r, char *buf, size_t len)
{
	return gc_nvml_strerror(&f->n, r, buf, len);
}

#define nv_ok(f, call)                                                                   \
	do {                                                                             \
		gc_nvml_ret r_ = (call);                                                 \
		char b_[128];                                                            \
		gc_assert_f(r_ == GC_NVML_SUCCESS, "%s: %s", #call, rs(f, r_, b_, sizeof(b_))); \
	} while (0)

static int devfds(void)
{
	int n = gc_devfd_count(DEV_PREFIX);

	gc_assert_f(n >= 0, "/proc/self/fd: %s", strerror(-n));
	return n;
}

static void ref_take(struct fx *f, unsigned i)
{
	struct ref_dev *d = &f->dev[i];
	gc_nvml_device h;
	gc_nvml_pci pci;
	gc_nvml_memory m;

	nv_ok(f, f->n.fn.by_index(i, &h));
	nv_ok(f, f->n.fn.uuid(h, d->uuid, sizeof(d->uuid)));
	nv_ok(f, f->n.fn.name(h, d->name, sizeof(d->name)));
	nv_ok(f, f->n.fn.pci(h, &pci));
	nv_ok(f, f->n.fn.memory(h, &m));
	snprintf(d->bus_id, sizeof(d->bus_id), "%s", pci.bus_id);
	d->mem_total = m.total;
	d->serial_ret = f->n.fn.serial(h, d->serial, sizeof(d->serial));
}

static void *fx_setup(void)
{
	struct fx *f = calloc(1, sizeof(*f));
	char why[256], b[128];
	gc_nvml_ret r;

	gc_assert(f);
	if (gc_nvml_open(&f->n, why, sizeof(why)) < 0)
		gc_skip("NVML: %s", why);
	f->fds0 = devfds();
	r = f->n.fn.init();
	if (r == GC_NVML_ERROR_DRIVER_NOT_LOADED || r == GC_NVML_ERROR_LIBRARY_NOT_FOUND)
		gc_skip("nvmlInit_v2: %s", rs(f, r, b, sizeof(b)));
	gc_assert_f(r == GC_NVML_SUCCESS, "nvmlInit_v2: %s", rs(f, r, b, sizeof(b)));
	nv_ok(f, f->n.fn.count(&f->count));
	if (f->count == 0) {
		f->n.fn.shutdown();
		gc_skip("NVML sees no GPU");
	}
	f->gpus = f->count;
	f->count = f->count > MAX_DEV ? MAX_DEV : f->count;
	for (unsigned i = 0; i < f->count; i++)
		ref_take(f, i);
	nv_ok(f, f->n.fn.shutdown());
	gc_assert_f(devfds() == f->fds0, "%d " DEV_PREFIX "* fds open after the reference "
		    "session's shutdown, %d before it", devfds(), f->fds0);
	return f;
}

static void fx_teardown(void *data)
{
	struct fx *f = data;

	gc_nvml_close(&f->n);
	free(f);
}

/* ------------------------------------------------------------ the session's calls */

static int nv_init(void *ctx)
{
	return ((struct fx *)ctx)->n.fn.init();
}

static int nv_shutdown(void *ctx)
{
	return ((struct fx *)ctx)->n.fn.shutdown();
}

static const char *nv_status(void *ctx, int r, char *buf, size_t len)
{
	return rs(ctx, r, buf, len);
}

/*
 * The session contract's table (contract/session.h). Its messages are
 * nv_ok's: the call named by its C text, its status in a 128-byte buffer,
 * a shutdown's status asserted.
 */
static struct gc_session ses(struct fx *f)
{
	return (struct gc_session){ .init_name = "f->n.fn.init()",
				    .shutdown_name = "f->n.fn.shutdown()", .init = nv_init,
				    .shutdown = nv_shutdown, .strerror = nv_status,
				    .status_len = 128, .checked = true, .ctx = f };
}

/* ------------------------------------------------------------ refcount */

/*
 * refcount: k inits, then k shutdowns. The library answers until the k-th
 * shutdown, the device nodes stay open while the count is above zero and
 * are back to where they were after it; the (k+1)-th shutdown returns
 * NVML_ERROR_UNINITIALIZED.
 */
GC_SESSION_REFCOUNT_CASES(refcount_ks, refcount_one);

/* What refcount's hooks share: the fixture, and the count's status after the latest shutdown. */
struct refcount {
	struct fx *f;
	gc_nvml_ret r;
};

/* After the k inits: the device nodes open (once a handle asks for a GPU). */
static void refcount_opened(void *ctx, unsigned k)
{
	struct fx *f = ((struct refcount *)ctx)->f;
	char fds[256];
	gc_nvml_device h;

	nv_ok(f, f->n.fn.by_index(0, &h)); /* nvmlInit_v2 attaches a GPU only when asked for one */
	gc_devfd_list(DEV_PREFIX, fds, sizeof(fds));
	gc_info("after %u inits: %d device fds (%s), %d before", k, devfds(), fds, f->fds0);
	gc_assert_f(devfds() > f->fds0, "no " DEV_PREFIX "* fd open in a session");
}

/* After shutdown i of k: before the k-th, the library answers and the nodes stay open. */
static void refcount_shut(void *ctx, unsigned i, unsigned k, const char *when)
{
	struct refcount *rc = ctx;
	struct fx *f = rc->f;
	unsigned n;
	char b[128];
	gc_nvml_ret r = f->n.fn.count(&n);

	(void)when;
	rc->r = r;
	if (i < k) {
		gc_assert_f(r == GC_NVML_SUCCESS, "shutdown %u of %u: nvmlDeviceGetCount_v2: %s",
			    i, k, rs(f, r, b, sizeof(b)));
		gc_assert_f(devfds() > f->fds0, "shutdown %u of %u closed the device nodes", i, k);
	}
}

/* After the k-th: UNINITIALIZED, the nodes back, one shutdown more UNINITIALIZED. */
static void refcount_closed(void *ctx, unsigned k)
{
	struct refcount *rc = ctx;
	struct fx *f = rc->f;
	gc_nvml_ret r = rc->r;
	char b[128];

	(void)k;
	gc_assert_f(r == GC_NVML_ERROR_UNINITIALIZED, "after the last shutdown "
		    "nvmlDeviceGetCount_v2: %s, not NVML_ERROR_UNINITIALIZED", rs(f, r, b, sizeof(b)));
	gc_assert_cmpint(devfds(), ==, f->fds0);
	r = f->n.fn.shutdown();
	gc_assert_f(r == GC_NVML_ERROR_UNINITIALIZED, "one shutdown too many: %s",
		    rs(f, r, b, sizeof(b)));
}

static void refcount_one(void *ctx, const unsigned *kp)
{
	struct fx *f = ctx;
	const struct gc_session s = ses(f);
	struct refcount rc = { .f = f, .r = GC_NVML_SUCCESS };

	gc_session_refcount(&s, &(struct gc_session_refcount){
		.opened = refcount_opened, .shut = refcount_shut, .closed = refcount_closed,
		.ctx = &rc }, *kp);
}

static void test_refcount(void *data)
{
	gc_variants(refcount_ks, data);
}

/* ------------------------------------------------------------ concurrency */

#define THREADS GC_SESSION_THREADS
#define STALL_S GC_SESSION_STALL_S
#define POLL_GAPS 4096

struct worker {
	struct shared *s;
	unsigned id;
};

/*
 * What the worker threads found; the first problem is kept, the main thread
 * fails on it. On the heap: after a deadlock, stuck threads keep using it.
 */
enum round_kind { ROUND_FULL, ROUND_QUERIES, ROUND_SESSIONS };

struct shared {
	struct worker wk[THREADS];
	pthread_t th[THREADS];
	unsigned nthreads;
	enum round_kind kind;
	struct fx *f;
	unsigned rounds;       /* each thread's, without a soak */
	uint64_t budget_end;   /* without a soak: no round starts after it (gc_now_ns) */
	unsigned over_budget;  /* atomic: workers that stopped because the budget ran out */
	struct gc_soak *soak;  /* concurrent-sessions': the rounds of every thread, shared */
	unsigned exhausted;    /* atomic: workers that stopped because the soak's rounds ran out */
	pthread_mutex_t lock;
	pthread_barrier_t go;  /* the workers and the main thread: all start at once */
	struct gc_problems pr;
	struct gc_progress pg; /* the watchdog's */
	uint64_t t_end;        /* when the last worker finished (the watchdog polls too coarsely) */
	int stop;            /* atomic: the watcher's, and everyone's after a deadlock */
	unsigned long polls; /* the watcher's */
	double round_ns[THREADS];      /* each thread's mean init -> queries -> shutdown */
	unsigned long thread_rounds[THREADS]; /* each thread's rounds */
	double poll_gap_ns[POLL_GAPS]; /* the watcher's time between polls, the first ones */
};

#define CHECK(s, what, r)                                                             \
	do {                                                                          \
		char b_[128];                                                         \
		if ((r) != GC_NVML_SUCCESS) {                                         \
			gc_problem(&s->pr, "%s: %s", what, rs((s)->f, r, b_, sizeof(b_)));    \
			return false;                                                 \
		}                                                                     \
	} while (0)

/* One request: the device by UUID, its answers against the reference. */
static bool request(struct shared *s, const struct ref_dev *d)
{
	const struct gc_nvml_fn *fn = &s->f->n.fn;
	char name[GC_NVML_NAME_LEN], serial[GC_NVML_SERIAL_LEN];
	gc_nvml_utilization u;
	gc_nvml_device h;
	gc_nvml_memory m;
	gc_nvml_pci pci;
	unsigned t;
	gc_nvml_ret r;

	CHECK(s, "nvmlDeviceGetHandleByUUID", fn->by_uuid(d->uuid, &h));
	CHECK(s, "nvmlDeviceGetName", fn->name(h, name, sizeof(name)));
	CHECK(s, "nvmlDeviceGetPciInfo_v3", fn->pci(h, &pci));
	CHECK(s, "nvmlDeviceGetMemoryInfo", fn->memory(h, &m));
	if (strcmp(name, d->name) || strcmp(pci.bus_id, d->bus_id) || m.total != d->mem_total) {
		gc_problem(&s->pr, "%s answered %s / %s / %llu bytes, the persistent session %s / %s / %llu",
			d->uuid, name, pci.bus_id, m.total, d->name, d->bus_id, d->mem_total);
		return false;
	}
	r = fn->serial(h, serial, sizeof(serial));
	if (r != d->serial_ret || (r == GC_NVML_SUCCESS && strcmp(serial, d->serial))) {
		gc_problem(&s->pr, "%s: serial %s (%d), the persistent session %s (%d)", d->uuid,
			r == GC_NVML_SUCCESS ? serial : "-", r, d->serial, d->serial_ret);
		return false;
	}
	r = fn->temperature(h, GC_NVML_TEMPERATURE_GPU, &t);
	if (r != GC_NVML_ERROR_NOT_SUPPORTED)
		CHECK(s, "nvmlDeviceGetTemperature", r);
	r = fn->utilization(h, &u);
	if (r != GC_NVML_ERROR_NOT_SUPPORTED)
		CHECK(s, "nvmlDeviceGetUtilizationRates", r);
	return true;
}

/* One init -> request -> shutdown round, or only its request, or only init + shutdown. */
static bool one_round(struct shared *s, unsigned i)
{
	const struct gc_nvml_fn *fn = &s->f->n.fn;
	gc_nvml_ret r = GC_NVML_SUCCESS;
	char b[128];
	bool answered;

	if (s->kind != ROUND_QUERIES && (r = fn->init()) != GC_NVML_SUCCESS) {
		gc_problem(&s->pr, "nvmlInit_v2 in round %u: %s", i, rs(s->f, r, b, sizeof(b)));
		return false;
	}
	answered = s->kind == ROUND_SESSIONS ? true : request(s, &s->f->dev[i % s->f->count]);
	if (s->kind != ROUND_QUERIES && (r = fn->shutdown()) != GC_NVML_SUCCESS) {
		gc_problem(&s->pr, "nvmlShutdown in round %u: %s", i, rs(s->f, r, b, sizeof(b)));
		return false;
	}
	return answered;
}

/*
 * Without a soak: round i of this thread may start while it has rounds left
 * and the budget has not run out. A clock read (vDSO, tens of ns) per round
 * is nothing beside a round of NVML calls (microseconds at the least).
 */
static bool own_round(struct shared *s, unsigned i)
{
	if (i >= s->rounds)
		return false;
	if (gc_now_ns() < s->budget_end)
		return true;
	__atomic_add_fetch(&s->over_budget, 1, __ATOMIC_RELAXED);
	return false;
}

/* Whether this thread's round i may start: nothing went wrong, and rounds are left. */
static bool next_round(struct shared *s, unsigned i)
{
	if (gc_problems_count(&s->pr) || __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		return false;
	if (!s->soak)
		return own_round(s, i);
	if (gc_soak_claim(s->soak))
		return true;
	__atomic_add_fetch(&s->exhausted, 1, __ATOMIC_RELAXED);
	return false;
}

static void *worker(void *p)
{
	struct shared *s = ((struct worker *)p)->s;
	uint64_t t0;
	unsigned i;

	pthread_barrier_wait(&s->go);
	t0 = gc_now_ns();
	for (i = 0; next_round(s, i); i++) {
		if (!one_round(s, i))
			break;
		gc_progress_round(&s->pg);
		if (s->soak)
			gc_soak_done(s->soak);
	}
	pthread_mutex_lock(&s->lock);
	s->round_ns[((struct worker *)p)->id] = i ? (double)(gc_now_ns() - t0) / i : 0;
	s->thread_rounds[((struct worker *)p)->id] = i;
	if (gc_now_ns() > s->t_end)
		s->t_end = gc_now_ns();
	pthread_mutex_unlock(&s->lock);
	gc_progress_done(&s->pg);
	return NULL;
}

/* The watcher: its own session for the whole test, polling every device. */
static void *watcher(void *p)
{
	struct shared *s = p;
	const struct gc_nvml_fn *fn = &s->f->n.fn;
	char b[128];
	gc_nvml_ret r = fn->init();

	if (r != GC_NVML_SUCCESS) {
		gc_problem(&s->pr, "watcher nvmlInit_v2: %s", rs(s->f, r, b, sizeof(b)));
		return NULL;
	}
	for (uint64_t last = gc_now_ns(); !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE) &&
	     !gc_problems_count(&s->pr);) {
		uint64_t now;

		s->polls += request(s, &s->f->dev[s->polls % s->f->count]);
		now = gc_now_ns();
		if (s->polls && s->polls <= POLL_GAPS)
			s->poll_gap_ns[s->polls - 1] = (double)(now - last);
		last = now;
		usleep(1000);
	}
	r = fn->shutdown();
	if (r != GC_NVML_SUCCESS)
		gc_problem(&s->pr, "watcher nvmlShutdown: %s", rs(s->f, r, b, sizeof(b)));
	return NULL;
}

static struct shared *shared_new(struct fx *f, enum round_kind kind, unsigned nthreads,
				 unsigned rounds)
{
	struct shared *s = calloc(1, sizeof(*s));

	gc_assert(s);
	s->f = f;
	s->kind = kind;
	s->nthreads = nthreads;
	s->rounds = rounds;
	s->budget_end = UINT64_MAX;
	pthread_mutex_init(&s->lock, NULL);
	gc_problems_init(&s->pr);
	return s;
}

/*
 * Start the workers, at once (a thread created last must not find the
 * rounds or the budget used up by the first ones: every thread has to run
 * one), wait for them (the watchdog), join them.
 */
static void run_workers(struct shared *s)
{
	gc_assert(pthread_barrier_init(&s->go, NULL, s->nthreads + 1) == 0);
	for (unsigned i = 0; i < s->nthreads; i++) {
		s->wk[i] = (struct worker){ s, i };
		gc_assert(pthread_create(&s->th[i], NULL, worker, &s->wk[i]) == 0);
	}
	pthread_barrier_wait(&s->go);
	gc_progress_await(&s->pg, s->nthreads, STALL_S, &s->stop, "NVML");
	for (unsigned i = 0; i < s->nthreads; i++)
		pthread_join(s->th[i], NULL);
	pthread_barrier_destroy(&s->go);
}

static void shared_free(struct shared *s)
{
	gc_problems_destroy(&s->pr);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Move the means of the threads that ran a round to the front of ns[]: how many there are. */
static unsigned ran_a_round(double *ns, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (ns[i] > 0)
			ns[k++] = ns[i];
	return k;
}

/* The fewest and the most rounds one of the threads ran. */
static void round_spread(const struct shared *s, unsigned long *lo, unsigned long *hi)
{
	*lo = (unsigned long)-1, *hi = 0;
	for (unsigned i = 0; i < s->nthreads; i++) {
		*lo = s->thread_rounds[i] < *lo ? s->thread_rounds[i] : *lo;
		*hi = s->thread_rounds[i] > *hi ? s->thread_rounds[i] : *hi;
	}
}

/* Every thread ran a round: a budget that ends the rounds must not hide one that could not. */
static void assert_each_ran(const struct shared *s)
{
	unsigned none = 0;

	for (unsigned i = 0; i < s->nthreads; i++)
		none += s->thread_rounds[i] == 0;
	gc_assert_f(none == 0, "%u of %u threads ran no round", none, s->nthreads);
}

/* The run's level (lib/soak.h), which sets the budgets below. */
static enum gc_level run_level(void)
{
	const char *env = getenv(GC_LEVEL_ENV);
	enum gc_level lv;

	gc_assert_f(gc_level_parse(env, &lv) == 0, "%s=%s: not a level (quick, standard, long)",
		    GC_LEVEL_ENV, env);
	return lv;
}

/*
 * concurrent-sessions' budget at standard and quick (long keeps its share of
 * --duration). NVML opens every GPU of the node whatever
 * CUDA_VISIBLE_DEVICES says, and a round costs more with each: standard's
 * 256000 rounds took 4.4 s on one H100, 48.6 s on two H200s, 524 s on four
 * (about 490 rounds a second, half a second a thread's round). What the
 * test shows, 256 handlers at once through refcounted init and shutdown
 * with right answers, no deadlock and the nodes back, needs every thread
 * through rounds interleaved with the others', not a count: 20 s leaves
 * one GPU its whole count (in its fast runs) and gives four GPUs about
 * 10000 rounds, some 38 a thread; quick's 3 s gives them about 1500, some 6
 * a thread (quick's own count, 5120, takes 0.1 s on one H100).
 */
#define CONCURRENT_BUDGET_S 20.0
#define CONCURRENT_BUDGET_QUICK_S 3.0

/*
 * concurrent-sessions: 256 threads share the level's rounds (a soak:
 * 256 x 1000 at standard, 256 x 20 at quick, or fewer where the budget
 * above ends it first; as many as fit at long), each round init -> queries
 * by UUID -> shutdown, while a watcher holds its own session and polls: no
 * deadlock (watchdog), no error, every answer equal to the persistent
 * session's, every thread ran a round and went on until the rounds ran
 * out, device nodes back after.
 */
static void test_concurrent(void *data)
{
	struct shared *s = shared_new(data, ROUND_FULL, THREADS, 0);
	unsigned long rounds, lo, hi;
	pthread_t w;

	s->soak = gc_session_soak_start(run_level() == GC_LEVEL_QUICK ? CONCURRENT_BUDGET_QUICK_S
								      : CONCURRENT_BUDGET_S,
		"one thread's round: nvmlInit_v2, a device by UUID and its name, PCI, memory, "
		"serial, temperature and utilization checked, nvmlShutdown");
	gc_assert(pthread_create(&w, NULL, watcher, s) == 0);
	run_workers(s);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(w, NULL);
	rounds = gc_soak_count(s->soak);
	round_spread(s, &lo, &hi);
	gc_info("%u threads on %u GPUs, %lu rounds (%lu to %lu a thread): %lu answers checked, "
		"watcher %lu polls, %u problems", THREADS, s->f->gpus, rounds, lo, hi,
		gc_progress_rounds(&s->pg), s->polls, gc_problems_count(&s->pr));
	gc_soak_end(s->soak);
	gc_problems_assert_none(&s->pr);
	gc_assert_cmpuint(gc_progress_rounds(&s->pg), ==, rounds);
	gc_assert_f(s->exhausted == THREADS, "%u of %u threads stopped before the rounds (or "
		    "the budget) ran out", THREADS - s->exhausted, THREADS);
	assert_each_ran(s);
	gc_assert_cmpint(devfds(), ==, s->f->fds0);
	gc_metric("round-of-256", "ns", GC_LOWER_IS_BETTER, s->round_ns,
		  ran_a_round(s->round_ns, THREADS));
	if (s->polls > 1)
		gc_metric("watcher-poll-gap", "ns", GC_LOWER_IS_BETTER, s->poll_gap_ns,
			  s->polls < POLL_GAPS ? s->polls : POLL_GAPS);
	shared_free(s);
}

/* ------------------------------------------------------------ contention */

#define CONTENTION_ROUNDS 100
/*
 * Each case's budget: a thread starts no round after it (each thread 100
 * rounds or the budget, whichever ends first). 256 threads x 100 rounds
 * took 247 s for the seven cases on two and on four GPUs; what a case
 * measures is a rate, which a few rounds a thread give: at half a second a
 * round (four GPUs), 3 s is some 6 rounds for each of 256 threads.
 */
#define CONTENTION_BUDGET_S 3.0
#define CONTENTION_BUDGET_QUICK_S 1.0

static const char *const round_names[] = {
	[ROUND_FULL] = "full", [ROUND_QUERIES] = "queries", [ROUND_SESSIONS] = "init-shutdown",
};

struct contention_case {
	enum round_kind kind;
	unsigned threads;
	bool watched; /* with concurrent-sessions' watcher polling beside the threads */
};

/*
 * contention: where the time of a concurrent-sessions round goes. The full
 * round, only its queries, and only its init + shutdown pair (warm: the
 * main thread holds a session), each from 1 and from 256 threads, each
 * thread 100 rounds or the case's budget, whichever ends first. Nothing
 * is asserted of the times; the answers are checked as in
 * concurrent-sessions, and every thread must have run a round.
 * full-256-watched adds concurrent-sessions' watcher: on the H100 and H200
 * (driver 580.159.04) that alone made the wall time per round 4 to 6 times
 * longer, unexplained so far.
 */
GC_VARIANTS_F(struct contention_case, contention_cases, contention_one, "%s-%u%s",
	      round_names[c->kind], c->threads, c->watched ? "-watched" : "") = {
	{ ROUND_FULL, 1, false },     { ROUND_FULL, THREADS, false },
	{ ROUND_QUERIES, 1, false },  { ROUND_QUERIES, THREADS, false },
	{ ROUND_SESSIONS, 1, false }, { ROUND_SESSIONS, THREADS, false },
	{ ROUND_FULL, THREADS, true },
};

/* What ran of a contention case, in words. */
static void contention_info(const struct shared *s, const struct contention_case *c,
			    double budget_s, double per_round)
{
	unsigned long lo, hi;
	char ended[64];

	round_spread(s, &lo, &hi);
	if (s->over_budget)
		snprintf(ended, sizeof(ended), "the %g s budget ended it", budget_s);
	else
		snprintf(ended, sizeof(ended), "all %d a thread ran", CONTENTION_ROUNDS);
	gc_info("%u threads on %u GPUs, %lu to %lu rounds a thread of %d (%s): %.0f ns of wall "
		"time per round%s (%lu polls)", c->threads, s->f->gpus, lo, hi, CONTENTION_ROUNDS,
		ended, per_round, c->watched ? ", a watcher polling" : "", s->polls);
}

/*
 * One contention case, in a session the main thread holds: each thread's
 * mean round, and the wall time per round of all threads together (what
 * the library serves per second, inverted), over the rounds that ran.
 */
static void contention_one(void *ctx, const struct contention_case *c)
{
	struct fx *f = ctx;
	struct shared *s = shared_new(f, c->kind, c->threads, CONTENTION_ROUNDS);
	const struct gc_session se = ses(f);
	double budget_s = run_level() == GC_LEVEL_QUICK ? CONTENTION_BUDGET_QUICK_S
							 : CONTENTION_BUDGET_S;
	unsigned long rounds;
	uint64_t t0;
	double per_round;
	pthread_t w;

	gc_session_open(&se);
	if (c->watched)
		gc_assert(pthread_create(&w, NULL, watcher, s) == 0);
	t0 = gc_now_ns();
	s->budget_end = t0 + (uint64_t)(budget_s * 1e9);
	run_workers(s);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	if (c->watched)
		pthread_join(w, NULL);
	gc_session_close(&se, "the held session");
	gc_problems_assert_none(&s->pr);
	rounds = gc_progress_rounds(&s->pg);
	per_round = rounds ? (double)(s->t_end - t0) / (double)rounds : NAN;
	contention_info(s, c, budget_s, per_round);
	assert_each_ran(s);
	gc_metric("round", "ns", GC_LOWER_IS_BETTER, s->round_ns, c->threads);
	gc_metric("wall-per-round", "ns", GC_LOWER_IS_BETTER, &per_round, 1);
	shared_free(s);
}

static void test_contention(void *data)
{
	gc_variants(contention_cases, data);
}

/* ------------------------------------------------- inits and shutdowns unpaired */

#define UNPAIRED GC_SESSION_UNPAIRED

struct unpaired {
	struct shared *s;
	pthread_barrier_t *go;
	bool shut; /* this thread shuts down instead of initialising */
};

static void *unpaired_thread(void *p)
{
	struct unpaired *u = p;
	const struct gc_nvml_fn *fn = &u->s->f->n.fn;
	gc_nvml_ret r;
	char b[128];

	pthread_barrier_wait(u->go);
	r = u->shut ? fn->shutdown() : fn->init();
	if (r != GC_NVML_SUCCESS)
		gc_problem(&u->s->pr, "%s: %s", u->shut ? "nvmlShutdown" : "nvmlInit_v2",
			rs(u->s->f, r, b, sizeof(b)));
	return NULL;
}

/* n threads released at once, each one call (init or shutdown). */
static void burst(struct shared *s, bool shut, unsigned n)
{
	pthread_t th[UNPAIRED];
	struct unpaired u[UNPAIRED];
	pthread_barrier_t go;

	gc_assert(pthread_barrier_init(&go, NULL, n) == 0);
	for (unsigned i = 0; i < n; i++) {
		u[i] = (struct unpaired){ s, &go, shut };
		gc_assert(pthread_create(&th[i], NULL, unpaired_thread, &u[i]) == 0);
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
}

/*
 * unpaired-init: 64 threads call init at once and never shut down; 64 other
 * threads then call shutdown at once. The count ends at zero: the next
 * shutdown is NVML_ERROR_UNINITIALIZED and the device nodes are released.
 */
static void test_unpaired(void *data)
{
	struct shared *s = shared_new(data, ROUND_FULL, 0, 0);
	const struct fx *f = data;
	char b[128];
	gc_nvml_ret r;
	int held;

	burst(s, false, UNPAIRED);
	held = devfds();
	burst(s, true, UNPAIRED);
	gc_problems_assert_none(&s->pr);
	r = f->n.fn.shutdown();
	gc_info("%d device fds after %d concurrent inits, %d after as many shutdowns from other "
		"threads, %d before; one more shutdown: %s", held, UNPAIRED, devfds(), f->fds0,
		rs(f, r, b, sizeof(b)));
	gc_assert_f(r == GC_NVML_ERROR_UNINITIALIZED, "the count did not end at zero: one more "
		    "shutdown gave %s", rs(f, r, b, sizeof(b)));
	gc_assert_cmpint(devfds(), ==, f->fds0);
	shared_free(s);
}

/* ------------------------------------------------------------ handles */

struct stale {
	struct fx *f;
	gc_nvml_device h;
};

/* In a child: a handle of an ended session names the same device or fails; exit 0 / 1 / 2. */
static void stale_use(void *arg)
{
	struct stale *st = arg;
	char uuid[GC_NVML_UUID_LEN];
	gc_nvml_ret r = st->f->n.fn.uuid(st->h, uuid, sizeof(uuid));

	printf("stale handle: nvmlDeviceGetUUID -> %d%s%s\n", r, r ? "" : " ",
	       r ? "" : uuid);
	fflush(stdout);
	exit(r != GC_NVML_SUCCESS ? 1 : strcmp(uuid, st->f->dev[0].uuid) == 0 ? 0 : 2);
}

/* The first session's handle: device 0's (nv_ok names the call as it was written). */
static void handle_take(void *ctx)
{
	struct stale *p = ctx, st = *p;
	struct fx *f = st.f;

	nv_ok(f, f->n.fn.by_index(0, &st.h));
	p->h = st.h;
}

/* In the next session, the stale handle used in a child: its device, or an error. */
static void handle_stale(void *ctx)
{
	struct stale st = *(struct stale *)ctx;
	struct gc_child_status cs;

	gc_assert_ok(gc_fork_run(stale_use, &st, 10000, &cs));
	gc_info("stale handle in a child: %s %d", cs.fate == GC_CHILD_EXITED ? "exit" :
		cs.fate == GC_CHILD_SIGNALED ? "signal" : "timed out", cs.code);
	gc_assert_f(cs.fate == GC_CHILD_EXITED && cs.code != 2, "a handle of an ended session %s",
		    cs.fate == GC_CHILD_EXITED ? "named another device" :
		    cs.fate == GC_CHILD_SIGNALED ? "crashed the process" : "hung");
}

/* The device found again by its UUID: the same PCI bus id and serial. */
static void handle_again(void *ctx)
{
	struct fx *f = ((struct stale *)ctx)->f;
	struct ref_dev again;

	memset(&again, 0, sizeof(again));
	{
		gc_nvml_device h;
		gc_nvml_pci pci;

		nv_ok(f, f->n.fn.by_uuid(f->dev[0].uuid, &h));
		nv_ok(f, f->n.fn.pci(h, &pci));
		again.serial_ret = f->n.fn.serial(h, again.serial, sizeof(again.serial));
		gc_assert_eq_str(pci.bus_id, f->dev[0].bus_id);
	}
	gc_assert_cmpint(again.serial_ret, ==, f->dev[0].serial_ret);
	if (again.serial_ret == GC_NVML_SUCCESS)
		gc_assert_eq_str(again.serial, f->dev[0].serial);
}

/*
 * handles-across-cycles: a handle from one session, used after a full
 * shutdown + init (in a forked child: it may fault), names the same device
 * or fails cleanly, never another device; the device found again by UUID
 * has the same PCI bus id and serial.
 */
static void test_handles(void *data)
{
	struct fx *f = data;
	const struct gc_session s = ses(f);
	struct stale st = { .f = f };

	gc_session_handles(&s, &(struct gc_session_handles){
		.take = handle_take, .stale = handle_stale, .again = handle_again, .ctx = &st });
}

/*
 * unknown-uuid: a well-formed UUID that names no device gives
 * NVML_ERROR_NOT_FOUND (nvmlDeviceGetHandleByUUID's return list: for a uuid
 * that does not match a valid device on the system), a malformed one
 * NOT_FOUND or INVALID_ARGUMENT (listed for a uuid that is invalid)
 * [src zspace/system.cuda-12.6 include/nvml.h @ b3d92c837713] (CUDA 12.6.3).
 */
static void unknown_lookups(void *ctx)
{
	struct fx *f = ctx;
	gc_nvml_device h;
	gc_nvml_ret r;
	char b[128];

	r = f->n.fn.by_uuid("GPU-00000000-0000-0000-0000-000000000000", &h);
	gc_info("unknown UUID: %s", rs(f, r, b, sizeof(b)));
	gc_assert_f(r == GC_NVML_ERROR_NOT_FOUND, "unknown UUID: %s", rs(f, r, b, sizeof(b)));
	r = f->n.fn.by_uuid("not-a-uuid", &h);
	gc_info("malformed UUID: %s", rs(f, r, b, sizeof(b)));
	gc_assert_f(r == GC_NVML_ERROR_NOT_FOUND || r == GC_NVML_ERROR_INVALID_ARGUMENT,
		    "malformed UUID: %s", rs(f, r, b, sizeof(b)));
}

static void test_unknown_uuid(void *data)
{
	const struct gc_session s = ses(data);

	gc_session_within(&s, unknown_lookups, data, "unknown-uuid");
}

/* ------------------------------------------------------------ init flags */

struct flag_case {
	const char *name;
	unsigned flags;
};

/* init-flags: NVML_INIT_FLAG_NO_GPUS and NO_ATTACH each init; what they open is released. */
GC_VARIANTS(struct flag_case, flag_cases, flag_one) = {
	{ "no-gpus", GC_NVML_INIT_FLAG_NO_GPUS },
	{ "no-attach", GC_NVML_INIT_FLAG_NO_ATTACH },
};

/* What one init flag opens: device fds and the device count in that session; released after. */
static void flag_one(void *ctx, const struct flag_case *c)
{
	struct fx *f = ctx;
	const struct gc_session s = ses(f);
	char fds[256], b[128];
	unsigned n = 0;
	gc_nvml_ret r;

	nv_ok(f, f->n.fn.init_flags(c->flags));
	gc_devfd_list(DEV_PREFIX, fds, sizeof(fds));
	r = f->n.fn.count(&n);
	gc_info("nvmlInitWithFlags(%u): %d device fds (%s); nvmlDeviceGetCount_v2: %s, %u", c->flags,
		devfds(), fds, rs(f, r, b, sizeof(b)), n);
	gc_session_close(&s, "init-flags");
	gc_assert_cmpint(devfds(), ==, f->fds0);
}

static void test_init_flags(void *data)
{
	gc_variants(flag_cases, data);
}

/* exclusive-node: the /dev/gim-smi0 case is AMD's (amdsmi_session, rsmi_session). */
static void test_exclusive_node(void *data)
{
	(void)data;
	gc_skip("no exclusive management node on NVIDIA (the /dev/gim-smi0 case is AMD's)");
}

/* ------------------------------------------------------------ cost */

#define COST_REPS GC_SESSION_COST_REPS

static double ns_since(uint64_t t0)
{
	return (double)(gc_now_ns() - t0);
}

/* Nanoseconds since *t0, and *t0 moved to now. */
static double lap(uint64_t *t0)
{
	uint64_t now = gc_now_ns();
	double d = (double)(now - *t0);

	*t0 = now;
	return d;
}

/*
 * Cold: each session from zero, what a lazy daemon pays per request. init
 * alone, then the first handle (NVML attaches the GPU only then), one query,
 * and the outermost shutdown; request-lazy is the whole of it.
 */
static void cost_cold(struct fx *f, double *lazy)
{
	const struct gc_session s = ses(f);
	double init[COST_REPS], first[COST_REPS], shut[COST_REPS];
	gc_nvml_device h;
	gc_nvml_memory m;

	for (unsigned i = 0; i < COST_REPS; i++) {
		uint64_t t0 = gc_now_ns(), t1, t2, t3;

		gc_session_open(&s);
		t1 = gc_now_ns();
		nv_ok(f, f->n.fn.by_uuid(f->dev[0].uuid, &h));
		t2 = gc_now_ns();
		nv_ok(f, f->n.fn.memory(h, &m));
		t3 = gc_now_ns();
		gc_session_close(&s, "a cold session");
		init[i] = (double)(t1 - t0);
		first[i] = (double)(t2 - t1);
		shut[i] = ns_since(t3);
		lazy[i] = ns_since(t0);
	}
	gc_metric("init-cold", "ns", GC_LOWER_IS_BETTER, init, COST_REPS);
	gc_metric("first-handle-cold", "ns", GC_LOWER_IS_BETTER, first, COST_REPS);
	gc_metric("shutdown-cold", "ns", GC_LOWER_IS_BETTER, shut, COST_REPS);
	gc_metric("request-lazy", "ns", GC_LOWER_IS_BETTER, lazy, COST_REPS);
}

/* A persistent request: handle + memory, timed. */
static void cost_request(void *ctx, double *ns)
{
	struct fx *f = ctx;
	uint64_t t0 = gc_now_ns();
	gc_nvml_device h;
	gc_nvml_memory m;

	nv_ok(f, f->n.fn.by_uuid(f->dev[0].uuid, &h));
	nv_ok(f, f->n.fn.memory(h, &m));
	*ns = ns_since(t0);
}

/* Warm, in a held session: an init / shutdown pair, and handle + memory (a persistent request). */
static void cost_warm(struct fx *f, double *query)
{
	const struct gc_session s = ses(f);
	double warm[COST_REPS];

	gc_session_cost_warm(&s, cost_request, warm, query, COST_REPS);
	gc_metric("init-shutdown-warm", "ns", GC_LOWER_IS_BETTER, warm, COST_REPS);
	gc_metric("query", "ns", GC_LOWER_IS_BETTER, query, COST_REPS);
}

/* Each query of a request alone, in a held session: where a request's time goes. */
static void cost_each_query(struct fx *f)
{
	const struct gc_session s = ses(f);
	double t[6][COST_REPS];
	static const char *const names[6] = { "query-name", "query-pci", "query-memory",
					      "query-serial", "query-temperature",
					      "query-utilization" };
	char buf[GC_NVML_NAME_LEN];
	gc_nvml_utilization u;
	gc_nvml_device h;
	gc_nvml_memory m;
	gc_nvml_pci pci;
	unsigned temp;

	gc_session_open(&s);
	nv_ok(f, f->n.fn.by_uuid(f->dev[0].uuid, &h));
	for (unsigned i = 0; i < COST_REPS; i++) {
		uint64_t t0 = gc_now_ns();

		f->n.fn.name(h, buf, sizeof(buf));
		t[0][i] = lap(&t0);
		f->n.fn.pci(h, &pci);
		t[1][i] = lap(&t0);
		f->n.fn.memory(h, &m);
		t[2][i] = lap(&t0);
		f->n.fn.serial(h, buf, GC_NVML_SERIAL_LEN);
		t[3][i] = lap(&t0);
		f->n.fn.temperature(h, GC_NVML_TEMPERATURE_GPU, &temp);
		t[4][i] = lap(&t0);
		f->n.fn.utilization(h, &u);
		t[5][i] = lap(&t0);
	}
	gc_session_close(&s, "the held session");
	for (unsigned q = 0; q < 6; q++)
		gc_metric(names[q], "ns", GC_LOWER_IS_BETTER, t[q], COST_REPS);
}

/*
 * cost: init, the first handle and shutdown from zero (cold), an init /
 * shutdown pair while another session holds the count (warm), one query in
 * a held session and each query alone, and the per-request session over the
 * persistent query, as a ratio: what lazy mode costs a daemon.
 */
static void test_cost(void *data)
{
	struct fx *f = data;
	double lazy[COST_REPS], query[COST_REPS];

	cost_cold(f, lazy);
	cost_warm(f, query);
	cost_each_query(f);
	gc_session_cost_ratio(lazy, query, COST_REPS);
	gc_assert_cmpint(devfds(), ==, f->fds0);
}

/* ------------------------------------------------------------ main */

static const struct gc_fixture fixture = { .setup = fx_setup, .teardown = fx_teardown };

static const struct gc_subtest subtests[] = {
	{ "refcount", test_refcount, "k inits and k shutdowns: works until the k-th, nodes held "
	  "only while the count is above zero, one shutdown too many is UNINITIALIZED" },
	{ "concurrent-sessions", test_concurrent, "256 threads init -> query by UUID -> shutdown "
	  "while a watcher holds a session: no deadlock, answers equal the persistent session's" },
	{ "contention", test_contention, "full rounds, queries only, init + shutdown only, "
	  "from 1 and 256 threads: where a concurrent round's time goes" },
	{ "unpaired-init", test_unpaired, "64 concurrent inits, then 64 shutdowns from other "
	  "threads: the count ends at zero, the nodes are released" },
	{ "handles-across-cycles", test_handles, "a handle of an ended session names its device "
	  "or fails; the UUID finds the same device again" },
	{ "unknown-uuid", test_unknown_uuid, "a UUID that names no device: NVML_ERROR_NOT_FOUND" },
	{ "init-flags", test_init_flags, "what NO_GPUS and NO_ATTACH open, released at shutdown" },
	{ "exclusive-node", test_exclusive_node, "a node one session at a time may hold (AMD only)" },
	{ "cost", test_cost, "init, shutdown, query, cold and warm; lazy over persistent" },
	{ 0 }
};

static const char *const soaks[] = { "concurrent-sessions", NULL };

GC_MAIN(.name = "nvml_session",
	.description = "NVML init / shutdown sessions: refcount, threads, device nodes, handles",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks,
	.placement = GC_PLACE_NODE /* NVML opens every GPU whatever CUDA_VISIBLE_DEVICES says */)
