// SPDX-License-Identifier: MIT
/* Signal storms aimed at one thread, sigiter, restart bookkeeping: see interrupt.h. */
#include "interrupt.h"
#include "measure.h"
#include "soak.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* glibc < 2.41 names the field only through the union. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "the handler needs lock-free atomic_ulong");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler needs lock-free atomic_int");

/*
 * The one piece of state this library owns: the calling thread's running
 * storm, which the signal handler cannot find any other way. initial-exec:
 * no lazy TLS allocation (not async-signal-safe) when the handler reads it.
 */
static _Thread_local struct gc_storm *active_storm __attribute__((tls_model("initial-exec")));

#define RELAXED memory_order_relaxed

/* ----------------------------------------------------------------- timer */

static struct timespec ns_to_ts(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};

	return ts;
}

/* One expiry after first_ns, then every interval_ns (0: none). first_ns 0 disarms. */
static int storm_arm(struct gc_storm *s, uint64_t first_ns, uint64_t interval_ns)
{
	struct itimerspec its = {
		.it_value = ns_to_ts(first_ns),
		.it_interval = ns_to_ts(interval_ns),
	};

	return timer_settime(s->timer, 0, &its, NULL) ? -errno : 0;
}

/* ------------------------------------------------------------ the handler */

static void storm_handler(int signo, siginfo_t *si, void *uctx)
{
	struct gc_storm *s = active_storm;
	unsigned long backstop;
	int saved_errno = errno;

	(void)signo;
	(void)uctx;
	/* Only our own timer's signals count; a stray kill() of the same signo does not. */
	if (!s || si->si_code != SI_TIMER || si->si_value.sival_ptr != s)
		return;
	atomic_fetch_add_explicit(&s->delivered, 1, RELAXED);
	if (si->si_overrun > 0)
		atomic_fetch_add_explicit(&s->overruns, (unsigned long)si->si_overrun, RELAXED);
	if (atomic_load_explicit(&s->inside, RELAXED)) {
		atomic_fetch_add_explicit(&s->landed_inside, 1, RELAXED);
		atomic_fetch_add_explicit(&s->bracket_hits, 1, RELAXED);
	}
	/* sigiter's backstop (see interrupt.h); timer_settime() is async-signal-safe. */
	backstop = atomic_exchange_explicit(&s->backstop_ns, 0, RELAXED);
	if (backstop)
		storm_arm(s, backstop, 0);
	errno = saved_errno;
}

/* --------------------------------------------------------------- helpers */

static int first_error(int r, int next)
{
	return r ? r : next;
}

static bool signo_valid(int signo)
{
	return signo >= 1 && signo <= SIGRTMAX && signo != SIGKILL && signo != SIGSTOP;
}

static void storm_reset(struct gc_storm *s, int signo, bool sa_restart)
{
	atomic_store_explicit(&s->delivered, 0, RELAXED);
	atomic_store_explicit(&s->landed_inside, 0, RELAXED);
	atomic_store_explicit(&s->overruns, 0, RELAXED);
	atomic_store_explicit(&s->bracket_hits, 0, RELAXED);
	atomic_store_explicit(&s->backstop_ns, 0, RELAXED);
	atomic_store_explicit(&s->inside, 0, RELAXED);
	s->calls = 0;
	s->calls_hit = 0;
	s->signo = signo;
	s->sa_restart = sa_restart;
	s->running = false;
	s->timer_made = false;
	s->unblocked = false;
}

static int storm_make_timer(struct gc_storm *s)
{
	struct sigevent sev;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = s->signo;
	sev.sigev_value.sival_ptr = s;
	sev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &s->timer))
		return -errno;
	s->timer_made = true;
	return 0;
}

static int storm_install(struct gc_storm *s)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = storm_handler;
	/* No SA_RESTART unless asked: EINTR is the point of the default storm. */
	sa.sa_flags = SA_SIGINFO | (s->sa_restart ? SA_RESTART : 0);
	sigemptyset(&sa.sa_mask);
	return sigaction(s->signo, &sa, &s->old_action) ? -errno : 0;
}

/* Unblock the signal in this thread when it is blocked; remember to block it again. */
static int storm_unblock(struct gc_storm *s)
{
	sigset_t cur, set;
	int r;

	r = pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (r)
		return -r;
	if (!sigismember(&cur, s->signo))
		return 0;
	sigemptyset(&set);
	sigaddset(&set, s->signo);
	r = pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	if (r)
		return -r;
	s->unblocked = true;
	return 0;
}

/* Timer made, handler installed, signal unblocked; nothing armed. */
static int storm_open(struct gc_storm *s, int signo, bool sa_restart)
{
	int r;

	if (active_storm)
		return -EBUSY;
	storm_reset(s, signo, sa_restart);
	r = storm_make_timer(s);
	if (r)
		return r;
	r = storm_install(s);
	if (r) {
		timer_delete(s->timer);
		s->timer_made = false;
		return r;
	}
	active_storm = s;
	s->running = true;
	r = storm_unblock(s);
	if (r)
		gc_storm_stop(s);
	return r;
}

/* ------------------------------------------------------------------ storm */

static int storm_cfg_normalize(const struct gc_storm_cfg *cfg, struct gc_storm_cfg *out)
{
	static const struct gc_storm_cfg defaults;

	*out = cfg ? *cfg : defaults;
	if (!out->signo)
		out->signo = GC_STORM_DEFAULT_SIGNO;
	if (!out->interval_ns)
		out->interval_ns = GC_STORM_DEFAULT_INTERVAL_NS;
	if (!out->first_ns)
		out->first_ns = out->interval_ns;
	if (!signo_valid(out->signo))
		return -EINVAL;
	if (!out->one_shot && out->interval_ns < GC_STORM_MIN_INTERVAL_NS)
		return -EINVAL;
	return 0;
}

int gc_storm_start(struct gc_storm *s, const struct gc_storm_cfg *cfg)
{
	struct gc_storm_cfg c;
	int r;

	r = storm_cfg_normalize(cfg, &c);
	if (r)
		return r;
	r = storm_open(s, c.signo, c.sa_restart);
	if (r)
		return r;
	r = storm_arm(s, c.first_ns, c.one_shot ? 0 : c.interval_ns);
	if (r)
		gc_storm_stop(s);
	return r;
}

/*
 * With the signal blocked, take any instance still pending (the timer may
 * have fired just before it was deleted), so that restoring the old action
 * (SIG_DFL terminates for a real-time signal) cannot be fatal.
 */
static int storm_drain_restore(struct gc_storm *s)
{
	static const struct timespec zero;
	sigset_t set, old;
	int r, r2;

	sigemptyset(&set);
	sigaddset(&set, s->signo);
	r = -pthread_sigmask(SIG_BLOCK, &set, &old);
	if (r)
		return r;
	while (sigtimedwait(&set, NULL, &zero) == s->signo)
		;
	if (sigaction(s->signo, &s->old_action, NULL))
		r = -errno;
	/* Leave it blocked if it was blocked before the storm began. */
	if (s->unblocked)
		return r;
	r2 = -pthread_sigmask(SIG_SETMASK, &old, NULL);
	return first_error(r, r2);
}

int gc_storm_stop(struct gc_storm *s)
{
	int r = 0;

	if (!s->running)
		return 0;
	atomic_store_explicit(&s->backstop_ns, 0, RELAXED);
	if (s->timer_made && timer_delete(s->timer))
		r = -errno;
	s->timer_made = false;
	r = first_error(r, storm_drain_restore(s));
	if (active_storm == s)
		active_storm = NULL;
	atomic_store_explicit(&s->inside, 0, RELAXED);
	s->running = false;
	return r;
}

struct gc_storm *gc_storm_current(void)
{
	return active_storm;
}

bool gc_storm_stop_leftover(void)
{
	struct gc_storm *s = gc_storm_current();

	if (!s)
		return false;
	gc_storm_stop(s);
	gc_warn("a storm was still running after the subtest; stopped");
	return true;
}

void gc_storm_enter(struct gc_storm *s)
{
	atomic_store_explicit(&s->bracket_hits, 0, RELAXED);
	atomic_store_explicit(&s->inside, 1, RELAXED);
	/* The handler runs on this thread: a compiler barrier is all the ordering needed. */
	atomic_signal_fence(memory_order_seq_cst);
}

bool gc_storm_leave(struct gc_storm *s)
{
	unsigned long hits;

	atomic_signal_fence(memory_order_seq_cst);
	atomic_store_explicit(&s->inside, 0, RELAXED);
	hits = atomic_load_explicit(&s->bracket_hits, RELAXED);
	s->calls++;
	if (hits)
		s->calls_hit++;
	return hits > 0;
}

struct gc_storm_counts gc_storm_counts(const struct gc_storm *s)
{
	struct gc_storm_counts c = {
		.delivered = atomic_load_explicit(&s->delivered, RELAXED),
		.landed_inside = atomic_load_explicit(&s->landed_inside, RELAXED),
		.overruns = atomic_load_explicit(&s->overruns, RELAXED),
		.calls = s->calls,
		.calls_hit = s->calls_hit,
	};

	return c;
}

const char *gc_storm_counts_str(const struct gc_storm *s, char *buf, size_t len)
{
	struct gc_storm_counts c = gc_storm_counts(s);

	snprintf(buf, len,
		 "delivered %" PRIu64 ", landed inside %" PRIu64 " (in %" PRIu64 " of %" PRIu64
		 " calls), overruns %" PRIu64,
		 c.delivered, c.landed_inside, c.calls_hit, c.calls, c.overruns);
	return buf;
}

void gc_storm_report(const struct gc_storm *s, const char *what)
{
	char buf[192];

	gc_info("%s: signals %s%s", what, gc_storm_counts_str(s, buf, sizeof(buf)),
		s->sa_restart ? " (handler with SA_RESTART)" : "");
}

/* ------------------------------------------------------------ storm sweep */

const uint64_t gc_storm_sweep_ns[GC_STORM_SWEEP_PERIODS] = {
	20000, 50000, 130000, 370000, 1000000,
};

/* per_period cycles under a storm of period_ns; false: the sweep stops. */
static bool sweep_period(struct gc_storm *s, struct gc_storm_sweep *sw, uint64_t period_ns)
{
	int r = gc_storm_start(s, &(struct gc_storm_cfg){ .interval_ns = period_ns,
							 .sa_restart = sw->sa_restart });
	bool ok = true;

	if (r) {
		sw->storm_err = r;
		return false;
	}
	for (unsigned i = 0; i < sw->per_period && ok; i++, sw->cycles++)
		ok = sw->cycle(sw->ctx, s, (unsigned)sw->cycles);
	r = gc_storm_stop(s);
	sw->delivered += gc_storm_counts(s).delivered;
	if (r && !sw->storm_err)
		sw->storm_err = r;
	return ok && !r;
}

void gc_storm_sweep(struct gc_storm *s, struct gc_storm_sweep *sw)
{
	for (size_t k = 0; k < GC_STORM_SWEEP_PERIODS; k++)
		if (!sweep_period(s, sw, gc_storm_sweep_ns[k]))
			return;
}

/* `20, 50, 130, 370 and 1000`: the periods in us. */
static const char *sweep_periods_us(char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < GC_STORM_SWEEP_PERIODS && n < len; k++) {
		const char *sep = !k ? "" : k + 1 < GC_STORM_SWEEP_PERIODS ? ", " : " and ";

		n += (size_t)snprintf(buf + n, len - n, "%s%" PRIu64, sep,
				      gc_storm_sweep_ns[k] / 1000);
	}
	return buf;
}

void gc_storm_sweep_report(const struct gc_storm_sweep *sw, const char *what)
{
	char periods[64];

	gc_info("%s: %" PRIu64 " signals delivered over %" PRIu64 " cycles (storms of %s us, %u "
		"cycles each%s)", what, sw->delivered, sw->cycles,
		sweep_periods_us(periods, sizeof(periods)), sw->per_period,
		sw->sa_restart ? ", handler with SA_RESTART" : "");
}

void gc_storm_sweep_assert(const struct gc_storm_sweep *sw)
{
	gc_assert_ok(sw->storm_err);
	gc_assert_eq_uint(sw->cycles, (uint64_t)GC_STORM_SWEEP_PERIODS * sw->per_period);
}

/* ---------------------------------------------------------------- sigiter */

int gc_sigiter_cfg_normalize(const struct gc_sigiter_cfg *cfg, struct gc_sigiter_cfg *out)
{
	static const struct gc_sigiter_cfg defaults;

	*out = cfg ? *cfg : defaults;
	if (!out->signo)
		out->signo = GC_STORM_DEFAULT_SIGNO;
	if (!out->first_delay_ns)
		out->first_delay_ns = GC_SIGITER_DEFAULT_FIRST_NS;
	if (!out->growth)
		out->growth = 2;
	if (!out->max_delay_ns)
		out->max_delay_ns = out->first_delay_ns > GC_SIGITER_DEFAULT_MAX_NS ?
					    out->first_delay_ns : GC_SIGITER_DEFAULT_MAX_NS;
	if (!out->max_passes)
		out->max_passes = GC_SIGITER_DEFAULT_PASSES;
	if (!signo_valid(out->signo) || out->growth < 2 || out->growth > 1024 ||
	    out->max_delay_ns < out->first_delay_ns)
		return -EINVAL;
	return 0;
}

uint64_t gc_sigiter_delay_ns(const struct gc_sigiter_cfg *cfg, unsigned step)
{
	uint64_t d = cfg->first_delay_ns;

	for (unsigned i = 0; i < step && d < cfg->max_delay_ns; i++) {
		if (d > cfg->max_delay_ns / cfg->growth)
			return cfg->max_delay_ns;
		d *= cfg->growth;
	}
	return d < cfg->max_delay_ns ? d : cfg->max_delay_ns;
}

enum gc_sigiter_verdict gc_sigiter_decide(const struct gc_sigiter_cfg *cfg, unsigned passes,
					  enum gc_sigiter_outcome last)
{
	if (passes > 0 && last == GC_SIGITER_MISS)
		return GC_SIGITER_COMPLETED;
	if (passes >= cfg->max_passes)
		return GC_SIGITER_EXHAUSTED;
	return GC_SIGITER_AGAIN;
}

enum gc_sigiter_outcome gc_sigiter_classify(uint64_t hits_inside, uint64_t delivered_armed,
					    uint64_t delivered_at_leave)
{
	if (hits_inside)
		return GC_SIGITER_HIT;
	/* A signal outside the bracket but before leave: the pass proves nothing. */
	if (delivered_at_leave != delivered_armed)
		return GC_SIGITER_EARLY;
	return GC_SIGITER_MISS;
}

int gc_sigiter_begin(struct gc_sigiter *it, const struct gc_sigiter_cfg *cfg)
{
	int r;

	if (active_storm)
		return -EBUSY;
	memset(it, 0, sizeof(*it));
	r = gc_sigiter_cfg_normalize(cfg, &it->cfg);
	if (r)
		return r;
	it->last = GC_SIGITER_NONE;
	return storm_open(&it->storm, it->cfg.signo, it->cfg.sa_restart);
}

bool gc_sigiter_next(struct gc_sigiter *it)
{
	enum gc_sigiter_verdict v;

	if (it->error || !it->storm.running)
		return false;
	v = gc_sigiter_decide(&it->cfg, it->passes, it->last);
	it->completed = v == GC_SIGITER_COMPLETED;
	if (v != GC_SIGITER_AGAIN)
		return false;
	it->delay_ns = gc_sigiter_delay_ns(&it->cfg, it->step);
	return true;
}

static unsigned long storm_delivered(const struct gc_storm *s)
{
	return atomic_load_explicit(&s->delivered, RELAXED);
}

/*
 * Arm the pass's one-shot timer. When it fires while being armed (a delay
 * shorter than timer_settime itself), re-arm with the next delay: the call
 * must start with the signal still to come.
 */
void gc_sigiter_enter(struct gc_sigiter *it)
{
	struct gc_storm *s = &it->storm;

	for (;;) {
		unsigned long before = storm_delivered(s);
		int r;

		atomic_store_explicit(&s->backstop_ns, it->delay_ns > GC_SIGITER_BACKSTOP_NS ?
				      it->delay_ns : GC_SIGITER_BACKSTOP_NS, RELAXED);
		r = storm_arm(s, it->delay_ns, 0);
		if (r) {
			it->error = first_error(it->error, r);
			break;
		}
		it->delivered_armed = storm_delivered(s);
		/* Terminates: the delay grows to the cap, which ends the loop too. */
		if (it->delivered_armed == before || it->delay_ns >= it->cfg.max_delay_ns)
			break;
		it->passes_early++;
		it->delay_ns = gc_sigiter_delay_ns(&it->cfg, ++it->step);
	}
	gc_storm_enter(s);
}

bool gc_sigiter_leave(struct gc_sigiter *it)
{
	struct gc_storm *s = &it->storm;
	bool hit = gc_storm_leave(s);
	uint64_t at_leave = storm_delivered(s);
	int r;

	atomic_store_explicit(&s->backstop_ns, 0, RELAXED);
	r = storm_arm(s, 0, 0);

	if (r)
		it->error = first_error(it->error, r);
	it->last = gc_sigiter_classify(hit, it->delivered_armed, at_leave);
	it->passes++;
	if (it->last == GC_SIGITER_HIT)
		it->passes_interrupted++;
	else if (it->last == GC_SIGITER_EARLY)
		it->passes_early++;
	it->step++;
	return hit;
}

int gc_sigiter_end(struct gc_sigiter *it)
{
	return first_error(it->error, gc_storm_stop(&it->storm));
}

/* ---------------------------------------------------------- restart probe */

struct probe_run {
	const struct gc_storm *s;
	const struct gc_restart_probe *p;
	int wfd;
	atomic_bool stop; /* the read returned: write nothing more */
	bool wrote, guard_expired;
};

static const uint8_t probe_bytes[GC_RESTART_PROBE_LEN] = {
	'g', 'p', 'u', 'c', 'o', 'n', 'f', 'o', 'r', 'm', '-', 'p', 'r', 'o', 'b', 'e',
};

/* Helper thread: writes once `signals` signals landed inside the read (or the guard passed). */
static void *probe_writer(void *arg)
{
	const struct timespec tick = { .tv_nsec = 50000 };
	struct probe_run *pr = arg;
	uint64_t deadline = gc_now_ns() + pr->p->guard_ns;

	while (!atomic_load(&pr->stop)) {
		bool enough = atomic_load_explicit(&pr->s->landed_inside, RELAXED) >=
			      pr->p->signals;

		pr->guard_expired = !enough && gc_now_ns() >= deadline;
		if (enough || pr->guard_expired) {
			pr->wrote = write(pr->wfd, probe_bytes, sizeof(probe_bytes)) ==
				    (ssize_t)sizeof(probe_bytes);
			return NULL;
		}
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* The bracketed read; the helper runs while the storm does. */
static void probe_read(struct gc_storm *s, int rfd, struct gc_restart_probe *p)
{
	uint8_t buf[GC_RESTART_PROBE_LEN];
	ssize_t n;

	gc_storm_enter(s);
	n = read(rfd, buf, sizeof(buf));
	p->err = n < 0 ? errno : 0;
	gc_storm_leave(s);
	p->n = (long)n;
	p->bytes_ok = n == (ssize_t)sizeof(buf) && !memcmp(buf, probe_bytes, sizeof(buf));
}

/* Storm, helper, read, then everything undone; 0 or the first -errno. */
static int probe_run(struct gc_storm *s, const struct gc_storm_cfg *cfg, int fds[2],
		     struct gc_restart_probe *p)
{
	struct probe_run pr = { .s = s, .p = p, .wfd = fds[1] };
	pthread_t helper;
	int r = gc_storm_start(s, cfg);

	if (r)
		return r;
	r = -pthread_create(&helper, NULL, probe_writer, &pr);
	if (r) {
		gc_storm_stop(s);
		return r;
	}
	probe_read(s, fds[0], p);
	r = gc_storm_stop(s);
	atomic_store(&pr.stop, true);
	pthread_join(helper, NULL);
	p->landed = gc_storm_counts(s).landed_inside;
	p->wrote = pr.wrote;
	p->guard_expired = pr.guard_expired;
	if (ioctl(fds[0], FIONREAD, &p->queued))
		p->queued = -1;
	return r;
}

int gc_storm_probe_restart(struct gc_storm *s, const struct gc_storm_cfg *cfg,
			   struct gc_restart_probe *p)
{
	int fds[2], r;

	if (!p->signals)
		p->signals = GC_RESTART_PROBE_SIGNALS;
	if (!p->guard_ns)
		p->guard_ns = GC_RESTART_PROBE_GUARD_NS;
	p->n = 0;
	p->err = 0;
	p->landed = 0;
	p->wrote = p->guard_expired = p->bytes_ok = false;
	p->queued = -1;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	r = probe_run(s, cfg, fds, p);
	close(fds[0]);
	close(fds[1]);
	return r;
}

enum gc_restart_verdict gc_restart_probe_verdict(const struct gc_restart_probe *p)
{
	/* An interrupted read consumed nothing: whatever the helper wrote is still queued. */
	int left = p->wrote ? GC_RESTART_PROBE_LEN : 0;

	if (p->n == -1 && p->err == EINTR && p->landed > 0 && p->queued == left)
		return GC_RESTART_EINTR;
	if (!p->bytes_ok || !p->wrote || p->queued != 0)
		return GC_RESTART_BROKEN;
	if (p->guard_expired || p->landed < p->signals)
		return GC_RESTART_UNPROVEN;
	return GC_RESTART_RESTARTED;
}

/* `16 (the bytes written)`, `-1 (EINTR)`... */
static const char *probe_ret_str(const struct gc_restart_probe *p, char *buf, size_t len)
{
	const char *name = strerrorname_np(p->err);

	if (p->n < 0)
		snprintf(buf, len, "%ld (%s)", p->n, name ? name : "unnamed errno");
	else
		snprintf(buf, len, "%ld (%s)", p->n, p->bytes_ok ? "the bytes written" :
			 "not the bytes written");
	return buf;
}

static const char *probe_helper_str(const struct gc_restart_probe *p)
{
	if (!p->wrote)
		return "wrote nothing";
	return p->guard_expired ? "wrote only when its guard expired" : "wrote";
}

const char *gc_restart_probe_str(const struct gc_restart_probe *p, char *buf, size_t len)
{
	char ret[64];

	snprintf(buf, len, "a blocking read of an empty pipe returned %s with %" PRIu64
		 " signals inside it; the helper (to write after %u signals inside, or %" PRIu64
		 " ms) %s; %d bytes left in the pipe", probe_ret_str(p, ret, sizeof(ret)),
		 p->landed, p->signals, p->guard_ns / 1000000u, probe_helper_str(p), p->queued);
	return buf;
}

/* --------------------------------------------------------------- progress */

void gc_progress_init(struct gc_progress *p, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->total = total;
}

int gc_progress_advance(struct gc_progress *p, int64_t ret)
{
	uint64_t rem = gc_progress_remaining(p);

	if (ret == -EINTR) {
		p->calls++;
		p->eintrs++;
		p->restarts += rem > 0;
		return 0;
	}
	if (ret < -4095) /* not an errno */
		return -EPROTO;
	if (ret < 0)
		return (int)ret;
	if ((uint64_t)ret > rem || (ret == 0 && rem > 0))
		return -EPROTO;
	p->calls++;
	p->done += (uint64_t)ret;
	if (!gc_progress_finished(p)) {
		p->partials++;
		p->restarts++;
	}
	return 0;
}

int gc_progress_report(struct gc_progress *p, int ret, uint64_t done_now)
{
	uint64_t delta;

	if (done_now < p->done || done_now > p->total || ret > 0)
		return -EPROTO;
	if (ret == 0 && done_now != p->total)
		return -EPROTO;
	delta = done_now - p->done;
	p->calls++;
	p->done = done_now;
	if (!gc_progress_finished(p)) {
		p->restarts++;
		if (delta)
			p->partials++;
		else if (ret == -EINTR)
			p->eintrs++;
	}
	return ret;
}

/* ----------------------------------------------------------- soaked sweeps */

/*
 * A storm sweep whose cycles a soak counts (lib/soak.h): whole sweeps (each
 * storm period in turn, per_period cycles each) one after the other, until
 * the level's cycles are done, a cycle fails or a storm does. A soak of one
 * sweep's cycles runs exactly that sweep at standard; at long the periods
 * come round again.
 */
struct soaked {
	struct gc_soak *soak;
	bool (*cycle)(void *ctx, struct gc_storm *s, unsigned i);
	void *ctx;
	bool ended;  /* the soak refused a cycle: the level's cycles are done */
	bool failed; /* a cycle returned false */
};

static bool soaked_cycle(void *arg, struct gc_storm *s, unsigned i)
{
	struct soaked *k = arg;

	if (!gc_soak_claim(k->soak)) {
		k->ended = true;
		return false;
	}
	if (!k->cycle(k->ctx, s, i)) {
		k->failed = true;
		return false;
	}
	gc_soak_done(k->soak);
	return true;
}

void gc_storm_sweep_soak(struct gc_storm *s, struct gc_storm_sweep *sw, struct gc_soak *soak)
{
	struct soaked k = { .soak = soak, .cycle = sw->cycle, .ctx = sw->ctx };

	sw->cycle = soaked_cycle;
	sw->ctx = &k;
	do
		gc_storm_sweep(s, sw);
	while (!k.ended && !k.failed && !sw->storm_err);
	sw->cycles -= k.ended; /* the sweep counts the refused call as a cycle */
	sw->cycle = k.cycle;
	sw->ctx = k.ctx;
}
