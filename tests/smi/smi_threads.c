// SPDX-License-Identifier: MIT
/*
 * The threaded subtests of the session harness: concurrent-sessions (a
 * monitoring daemon's session per request, from many threads) and
 * unpaired-init (inits and shutdowns from different threads). NOT RUN ON
 * AMD HARDWARE.
 *
 * Everything a thread touches lives in one heap block (struct run), never
 * in a stack frame of the test. The watchdog is progress based: when no
 * round (or call) completes for STALL_S seconds it fails naming how many
 * threads are still inside the library and in which call; the threads that
 * have not returned and the block are then left alone for the rest of the
 * process (the fixture's stuck count skips later subtests and keeps the
 * library and the fixture alive).
 */
#include "smi_session.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "soak.h"
#include "workers.h"

#define THREADS GC_SESSION_THREADS
#define UNPAIRED GC_SESSION_UNPAIRED
#define STALL_S GC_SESSION_STALL_S
#define TALLY 32
#define POLL_US 1000

struct run;

struct thread {
	struct run *run;
	unsigned id;
	pthread_t th;
	const char *in; /* the call the thread is inside, NULL outside the library (atomic) */
};

/* A status the docs do not rule on, counted by call. */
struct tally {
	const char *call;
	ss_status st;
	unsigned long n;
};

struct run {
	struct ss_fx *f;
	unsigned nthreads;
	struct gc_soak *soak;         /* concurrent-sessions' rounds, shared by the workers */
	int go, stop, shut;           /* atomic */
	unsigned long progress;       /* rounds or calls completed by the workers (atomic) */
	unsigned long wprogress;      /* the watcher's polls (atomic) */
	unsigned done, wdone;         /* workers, watcher returned (atomic) */
	pthread_mutex_t lock;         /* the fields below */
	unsigned long answers, requests, polls;
	struct gc_problems pr;        /* its own lock */
	struct tally tally[TALLY];
	unsigned ntally;
	unsigned long untallied;
	struct thread t[];
};

static struct run *run_new(struct ss_fx *f, unsigned nthreads)
{
	struct run *run = calloc(1, sizeof(*run) + nthreads * sizeof(run->t[0]));

	gc_assert(run);
	run->f = f;
	run->nthreads = nthreads;
	pthread_mutex_init(&run->lock, NULL);
	gc_problems_init(&run->pr);
	for (unsigned i = 0; i < nthreads; i++)
		run->t[i] = (struct thread){ .run = run, .id = i };
	return run;
}

static void run_free(struct run *run)
{
	gc_problems_destroy(&run->pr);
	pthread_mutex_destroy(&run->lock);
	free(run);
}

static bool stopped(struct run *run)
{
	return __atomic_load_n(&run->stop, __ATOMIC_ACQUIRE) ||
	       gc_problems_count(&run->pr);
}

/* ------------------------------------------------------------ inside the library */

static void enter(struct thread *t, const char *call)
{
	__atomic_store_n(&t->in, call, __ATOMIC_RELEASE);
}

static ss_status leave(struct thread *t, ss_status r)
{
	__atomic_store_n(&t->in, NULL, __ATOMIC_RELEASE);
	return r;
}

#define IN_LIB(t, call, expr) (enter((t), (call)), leave((t), (expr)))

static void count_status(struct run *run, const char *call, ss_status st)
{
	unsigned i;

	pthread_mutex_lock(&run->lock);
	for (i = 0; i < run->ntally; i++)
		if (run->tally[i].call == call && run->tally[i].st == st)
			break;
	if (i == run->ntally && run->ntally < TALLY)
		run->tally[run->ntally++] = (struct tally){ call, st, 0 };
	if (i < run->ntally)
		run->tally[i].n++;
	else
		run->untallied++;
	pthread_mutex_unlock(&run->lock);
}

/* A status other than the reference session's: a problem where counted, else tallied. */
static void seen(struct run *run, const char *call, ss_status r)
{
	char b[192];

	if (run->f->lib.refcounted)
		gc_problem(&run->pr, "%s: %s", call, ss_rs(run->f, r, b, sizeof(b)));
	else
		count_status(run, call, r);
}

/* One request: the device found by its id, every answer compared with the reference session's. */
static bool request(struct thread *t, const struct ss_dev *d)
{
	struct run *run = t->run;
	const struct ss_lib *l = &run->f->lib;
	struct ss_answer a;
	char b[400];
	uintptr_t h;
	bool wrong;
	int q;
	ss_status r = IN_LIB(t, l->resolve_call, l->ops->resolve(l->ctx, d->id, &h));

	if (r != SS_SUCCESS) {
		seen(run, l->resolve_call, r);
		return false;
	}
	enter(t, "the queries");
	l->ops->query(l->ctx, h, &a);
	leave(t, SS_SUCCESS);
	q = ss_diff(&d->a, &a, &wrong);
	if (q < 0)
		return true;
	if (wrong) {
		ss_diff_text(run->f, d, &a, q, b, sizeof(b));
		gc_problem(&run->pr, "wrong answer about %s: %s", d->id, b);
	} else {
		seen(run, l->query_call[q], a.st[q]);
	}
	return false;
}

static void finish(struct run *run, unsigned *done, unsigned long answers,
		   unsigned long requests)
{
	pthread_mutex_lock(&run->lock);
	run->answers += answers;
	run->requests += requests;
	pthread_mutex_unlock(&run->lock);
	__atomic_add_fetch(done, 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ threads */

/* A request thread: init, one request, shutdown, while the soak has rounds left. */
static void *worker(void *p)
{
	struct thread *t = p;
	struct run *run = t->run;
	const struct ss_lib *l = &run->f->lib;
	unsigned long answers = 0, requests = 0;

	for (unsigned i = 0; !stopped(run) && gc_soak_claim(run->soak); i++) {
		ss_status r = IN_LIB(t, l->init_call, l->ops->init(l->ctx));

		if (r == SS_SUCCESS) {
			requests++;
			answers += request(t, &run->f->dev[(t->id + i) % run->f->n]);
			r = IN_LIB(t, l->shutdown_call, l->ops->shutdown(l->ctx));
			if (r != SS_SUCCESS)
				seen(run, l->shutdown_call, r);
		} else {
			seen(run, l->init_call, r);
		}
		__atomic_add_fetch(&run->progress, 1, __ATOMIC_RELAXED);
		gc_soak_done(run->soak);
	}
	finish(run, &run->done, answers, requests);
	return NULL;
}

/* The watcher: its own session for the whole run, polling every device. */
static void *watcher(void *p)
{
	struct thread *t = p;
	struct run *run = t->run;
	const struct ss_lib *l = &run->f->lib;
	unsigned long polls = 0, answers = 0;
	ss_status r = IN_LIB(t, l->init_call, l->ops->init(l->ctx));

	if (r != SS_SUCCESS)
		seen(run, l->init_call, r);
	while (r == SS_SUCCESS) { /* at least one poll, however fast the workers are */
		answers += request(t, &run->f->dev[polls++ % run->f->n]);
		__atomic_add_fetch(&run->wprogress, 1, __ATOMIC_RELAXED);
		if (stopped(run))
			break;
		usleep(POLL_US);
	}
	if (r == SS_SUCCESS && (r = IN_LIB(t, l->shutdown_call, l->ops->shutdown(l->ctx))))
		seen(run, l->shutdown_call, r);
	pthread_mutex_lock(&run->lock);
	run->polls = answers;
	pthread_mutex_unlock(&run->lock);
	finish(run, &run->wdone, 0, 0);
	return NULL;
}

/* An unpaired-init thread: waits for the others, then one init or one shutdown. */
static void *burst_thread(void *p)
{
	struct thread *t = p;
	struct run *run = t->run;
	const struct ss_lib *l = &run->f->lib;
	bool shut = __atomic_load_n(&run->shut, __ATOMIC_ACQUIRE);
	const char *call = shut ? l->shutdown_call : l->init_call;
	ss_status r;

	while (!__atomic_load_n(&run->go, __ATOMIC_ACQUIRE))
		sched_yield();
	if (!stopped(run)) {
		r = IN_LIB(t, call, shut ? l->ops->shutdown(l->ctx) : l->ops->init(l->ctx));
		if (r != SS_SUCCESS)
			seen(run, call, r);
		__atomic_add_fetch(&run->progress, 1, __ATOMIC_RELAXED);
	}
	finish(run, &run->done, 0, 0);
	return NULL;
}

/* Threads [from, to); a creation failure stops (and releases) those already made. */
static void spawn(struct run *run, unsigned from, unsigned to, void *(*fn)(void *))
{
	for (unsigned i = from; i < to; i++) {
		int e = pthread_create(&run->t[i].th, NULL, fn, &run->t[i]);

		if (e) {
			__atomic_store_n(&run->stop, 1, __ATOMIC_RELEASE);
			__atomic_store_n(&run->go, 1, __ATOMIC_RELEASE);
			run->f->stuck += i - from; /* never joined: the fixture keeps what they use */
			gc_fail("pthread_create, thread %u of %u: %s", i, to, strerror(e));
		}
	}
}

static void join(struct run *run, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i++)
		pthread_join(run->t[i].th, NULL);
}

/* ------------------------------------------------------------ watchdog */

/* `rsmi_init x7, the queries x5`: threads [from, to) inside the library, by call. */
static unsigned inside(struct run *run, unsigned from, unsigned to, char *buf, size_t len)
{
	const char *calls[8];
	unsigned n[8], kinds = 0, total = 0;
	size_t used = 0;

	for (unsigned i = from; i < to; i++) {
		const char *in = __atomic_load_n(&run->t[i].in, __ATOMIC_ACQUIRE);
		unsigned k;

		if (!in)
			continue;
		total++;
		for (k = 0; k < kinds && calls[k] != in; k++)
			;
		if (k == kinds && kinds < 8) {
			calls[kinds] = in;
			n[kinds++] = 0;
		}
		if (k < kinds)
			n[k]++;
	}
	buf[0] = '\0';
	for (unsigned k = 0; k < kinds && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s x%u", k ? ", " : "",
					 calls[k], n[k]);
	return total;
}

/*
 * Until *done reaches target. No tick of *clock for STALL_S seconds:
 * deadlock. The threads are told to stop, never joined, and the fixture
 * keeps the library open for them.
 */
static void await(struct run *run, const unsigned long *clock, const unsigned *done,
		  unsigned target, unsigned from, unsigned to, const char *what)
{
	unsigned long last = __atomic_load_n(clock, __ATOMIC_RELAXED);
	uint64_t since = gc_now_ns();
	char calls[400];
	unsigned n;

	while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < target) {
		unsigned long now = __atomic_load_n(clock, __ATOMIC_RELAXED);

		if (now != last) {
			last = now;
			since = gc_now_ns();
		} else if (gc_now_ns() - since > STALL_S * 1000000000ull) {
			__atomic_store_n(&run->stop, 1, __ATOMIC_RELEASE);
			n = inside(run, from, to, calls, sizeof(calls));
			run->f->stuck += target - __atomic_load_n(done, __ATOMIC_ACQUIRE);
			gc_fail("deadlock: %u of %u threads still inside %s (%s); no %s completed "
				"for %d s, %lu before", n, to - from, run->f->lib.name, calls, what,
				STALL_S, last);
		}
		usleep(10000);
	}
}

/* ------------------------------------------------------------ verdicts */

static void report_tally(struct run *run, const char *phase)
{
	char b[192];

	for (unsigned i = 0; i < run->ntally; i++)
		gc_info("%s: %s gave %s x%lu (recorded: %s)", phase, run->tally[i].call,
			ss_rs(run->f, run->tally[i].st, b, sizeof(b)), run->tally[i].n,
			run->f->lib.count_why);
	if (run->untallied)
		gc_info("%s: %lu more statuses of other kinds", phase, run->untallied);
}

/* A session opened after the storm sees every device as the reference session did. */
static void fresh_session(struct ss_fx *f)
{
	const struct ss_lib *l = &f->lib;
	const struct gc_session s = ss_session(f);
	struct ss_answer a;
	char b[400];
	uintptr_t h;
	bool wrong;
	int q;

	gc_session_open(&s);
	ss_expect_count(f, "a session after the threads");
	for (unsigned i = 0; i < f->n; i++) {
		ss_ok(f, l->resolve_call, l->ops->resolve(l->ctx, f->dev[i].id, &h));
		l->ops->query(l->ctx, h, &a);
		q = ss_diff(&f->dev[i].a, &a, &wrong);
		if (q >= 0)
			ss_diff_text(f, &f->dev[i], &a, q, b, sizeof(b));
		gc_assert_f(q < 0, "a session after the threads, %s: %s", f->dev[i].id, b);
	}
	ss_shut(f, "a session after the threads");
	gc_assert_cmpint(ss_devfds(), ==, f->fds0);
}

/* ------------------------------------------------------------ concurrent-sessions */

static void concurrent_run(struct run *run)
{
	spawn(run, THREADS, THREADS + 1, watcher);
	spawn(run, 0, THREADS, worker);
	await(run, &run->progress, &run->done, THREADS, 0, THREADS, "round");
	__atomic_store_n(&run->stop, 1, __ATOMIC_RELEASE);
	await(run, &run->wprogress, &run->wdone, 1, THREADS, THREADS + 1, "watcher poll");
	join(run, 0, THREADS + 1);
}

/*
 * concurrent-sessions: 256 threads, each init -> request (the device by its
 * id; name, serial, PCI bus id, VRAM total, temperature, busy percent) ->
 * shutdown, the 256 sharing the level's rounds (a soak: 256 x 1000 at
 * standard, 256 x 20 at quick, as many as fit at long), while a watcher
 * holds its own session and polls. Asserted: no deadlock, no answer
 * that differs from the persistent session's, the device nodes back, and a
 * new session afterwards seeing every device as before. Where the library
 * promises the count (lib.refcounted), every call succeeds as in the
 * reference session and every request is answered; where it does not,
 * other statuses are counted and recorded.
 */
void ss_test_concurrent(void *data)
{
	struct ss_fx *f = data;
	struct run *run;
	unsigned long answers, requests, polls, expected;
	unsigned problems;
	char first[400];

	ss_need_ids(f);
	run = run_new(f, THREADS + 1);
	run->soak = gc_session_soak_start(0, "one thread's round: init, a device by its id and "
		"its name, serial, PCI bus, VRAM, temperature and busy percent compared, shutdown");
	concurrent_run(run);
	expected = gc_soak_count(run->soak);
	gc_soak_end(run->soak);
	gc_info("%u threads, %lu rounds: %lu requests, %lu answered as the reference session; "
		"the watcher: %lu polls answered", THREADS, expected, run->requests,
		run->answers, run->polls);
	report_tally(run, "concurrent");
	answers = run->answers;
	requests = run->requests;
	polls = run->polls;
	problems = gc_problems_count(&run->pr);
	snprintf(first, sizeof(first), "%s", run->pr.first);
	run_free(run);
	gc_assert_f(problems == 0, "%u problems; the first: %s", problems, first);
	if (f->lib.refcounted)
		gc_assert_f(answers == expected && requests == expected && polls > 0,
			    "%lu of %lu requests answered, watcher %lu", answers, expected, polls);
	gc_assert_cmpint(ss_devfds(), ==, f->fds0);
	fresh_session(f);
}

/* ------------------------------------------------------------ unpaired-init */

/* n threads released at once, each one init (or, shut, one shutdown). */
static struct run *burst(struct ss_fx *f, bool shut)
{
	struct run *run = run_new(f, UNPAIRED);

	run->shut = shut;
	spawn(run, 0, UNPAIRED, burst_thread);
	__atomic_store_n(&run->go, 1, __ATOMIC_RELEASE);
	await(run, &run->progress, &run->done, UNPAIRED, 0, UNPAIRED,
	      shut ? f->lib.shutdown_call : f->lib.init_call);
	join(run, 0, UNPAIRED);
	return run;
}

/*
 * unpaired-init: 64 threads call init at once and never shut down; 64
 * other threads then call shutdown at once. Asserted: no deadlock; where
 * the library promises the count under a lock (lib.refcounted: rocm_smi by
 * its source; amdsmi by its version, amdsmi_session.c), all 128 calls
 * succeed and the session is open between the bursts; in every case the
 * device nodes are released after the last shutdown and a new session
 * works. What one more shutdown returns is recorded (in a child).
 */
void ss_test_unpaired(void *data)
{
	struct ss_fx *f = data;
	struct run *inits, *shuts;
	unsigned problems;
	char first[400];

	ss_need_ids(f);
	inits = burst(f, false);
	report_tally(inits, "concurrent inits");
	if (f->lib.refcounted && gc_problems_count(&inits->pr) == 0)
		ss_expect_count(f, "between the bursts");
	ss_record_count(f, "between the bursts");
	shuts = burst(f, true);
	report_tally(shuts, "concurrent shutdowns");
	ss_record_count(f, "after the bursts");
	problems = gc_problems_count(&inits->pr) + gc_problems_count(&shuts->pr);
	snprintf(first, sizeof(first), "%s", gc_problems_count(&inits->pr) ? inits->pr.first :
		 shuts->pr.first);
	run_free(inits);
	run_free(shuts);
	gc_assert_f(problems == 0, "%u problems; the first: %s", problems, first);
	gc_assert_f(ss_devfds() == f->fds0, "%d device node fds open after %d concurrent inits "
		    "and as many shutdowns from other threads, %d before", ss_devfds(), UNPAIRED,
		    f->fds0);
	ss_extra_shutdown(f, "after the bursts");
	fresh_session(f);
}
