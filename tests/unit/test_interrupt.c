// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/interrupt's pure logic: the sigiter delay schedule, pass
 * classification and stop rule, and the restart bookkeeping (gc_progress).
 * The storm lifecycle checks arm timers far in the future: no signal fires.
 * The storm sweep checks run real storms over plain host sleeps, and the
 * SA_RESTART check a real storm over a blocking pipe read.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "interrupt.h"
#include "soak.h"

static struct gc_sigiter_cfg normalized(const struct gc_sigiter_cfg *in)
{
	struct gc_sigiter_cfg out;

	gc_assert_ok(gc_sigiter_cfg_normalize(in, &out));
	return out;
}

static void test_sigiter_cfg(void *fx)
{
	struct gc_sigiter_cfg c = normalized(NULL), out;

	(void)fx;
	gc_assert_eq_int(c.signo, SIGRTMIN + 2);
	gc_assert_eq_uint(c.first_delay_ns, GC_SIGITER_DEFAULT_FIRST_NS);
	gc_assert_eq_uint(c.growth, 2);
	gc_assert_eq_uint(c.max_delay_ns, GC_SIGITER_DEFAULT_MAX_NS);
	gc_assert_eq_uint(c.max_passes, GC_SIGITER_DEFAULT_PASSES);
	/* A first delay above the default cap raises the cap rather than failing. */
	c = normalized(&(struct gc_sigiter_cfg){ .first_delay_ns = 3000000000ull });
	gc_assert_eq_uint(c.max_delay_ns, 3000000000ull);
	c = normalized(&(struct gc_sigiter_cfg){ .signo = SIGUSR1, .growth = 3, .max_passes = 5 });
	gc_assert_eq_int(c.signo, SIGUSR1);
	gc_assert_eq_uint(c.growth, 3);
	gc_assert_eq_uint(c.max_passes, 5);
	gc_assert_errno(gc_sigiter_cfg_normalize(&(struct gc_sigiter_cfg){ .growth = 1 }, &out),
			EINVAL);
	gc_assert_errno(gc_sigiter_cfg_normalize(&(struct gc_sigiter_cfg){ .growth = 1025 }, &out),
			EINVAL);
	gc_assert_errno(gc_sigiter_cfg_normalize(&(struct gc_sigiter_cfg){
				.first_delay_ns = 2000, .max_delay_ns = 1000 }, &out), EINVAL);
	gc_assert_errno(gc_sigiter_cfg_normalize(&(struct gc_sigiter_cfg){ .signo = SIGKILL },
						 &out), EINVAL);
	gc_assert_errno(gc_sigiter_cfg_normalize(&(struct gc_sigiter_cfg){ .signo = -1 }, &out),
			EINVAL);
	gc_assert_errno(gc_sigiter_cfg_normalize(&(struct gc_sigiter_cfg){
				.signo = SIGRTMAX + 1 }, &out), EINVAL);
}

static void test_sigiter_delays(void *fx)
{
	struct gc_sigiter_cfg c = normalized(&(struct gc_sigiter_cfg){
		.first_delay_ns = 1000, .max_delay_ns = 1000000 });
	struct gc_sigiter_cfg big = normalized(&(struct gc_sigiter_cfg){
		.first_delay_ns = 1, .growth = 1024, .max_delay_ns = UINT64_MAX });

	(void)fx;
	gc_assert_eq_uint(gc_sigiter_delay_ns(&c, 0), 1000);
	gc_assert_eq_uint(gc_sigiter_delay_ns(&c, 1), 2000);
	gc_assert_eq_uint(gc_sigiter_delay_ns(&c, 9), 512000);
	gc_assert_eq_uint(gc_sigiter_delay_ns(&c, 10), 1000000); /* 1024000, capped */
	gc_assert_eq_uint(gc_sigiter_delay_ns(&c, 11), 1000000);
	gc_assert_eq_uint(gc_sigiter_delay_ns(&c, UINT32_MAX), 1000000);
	/* 1024^6 = 2^60 fits; 2^70 would overflow: saturates at the cap. */
	gc_assert_eq_uint(gc_sigiter_delay_ns(&big, 6), 1ull << 60);
	gc_assert_eq_uint(gc_sigiter_delay_ns(&big, 7), UINT64_MAX);
	gc_assert_eq_uint(gc_sigiter_delay_ns(&big, 1000), UINT64_MAX);
	/* The schedule never shrinks. */
	for (unsigned s = 0; s < 40; s++)
		gc_assert_cmpuint(gc_sigiter_delay_ns(&c, s + 1), >=, gc_sigiter_delay_ns(&c, s));
}

static void test_sigiter_decide(void *fx)
{
	struct gc_sigiter_cfg c = normalized(&(struct gc_sigiter_cfg){ .max_passes = 3 });

	(void)fx;
	gc_assert_eq_int(gc_sigiter_decide(&c, 0, GC_SIGITER_NONE), GC_SIGITER_AGAIN);
	gc_assert_eq_int(gc_sigiter_decide(&c, 1, GC_SIGITER_HIT), GC_SIGITER_AGAIN);
	gc_assert_eq_int(gc_sigiter_decide(&c, 1, GC_SIGITER_EARLY), GC_SIGITER_AGAIN);
	gc_assert_eq_int(gc_sigiter_decide(&c, 1, GC_SIGITER_MISS), GC_SIGITER_COMPLETED);
	gc_assert_eq_int(gc_sigiter_decide(&c, 2, GC_SIGITER_HIT), GC_SIGITER_AGAIN);
	gc_assert_eq_int(gc_sigiter_decide(&c, 3, GC_SIGITER_HIT), GC_SIGITER_EXHAUSTED);
	gc_assert_eq_int(gc_sigiter_decide(&c, 3, GC_SIGITER_EARLY), GC_SIGITER_EXHAUSTED);
	/* An uninterrupted last pass completes the iteration even at the limit. */
	gc_assert_eq_int(gc_sigiter_decide(&c, 3, GC_SIGITER_MISS), GC_SIGITER_COMPLETED);
}

static void test_sigiter_classify(void *fx)
{
	(void)fx;
	gc_assert_eq_int(gc_sigiter_classify(1, 5, 6), GC_SIGITER_HIT);
	gc_assert_eq_int(gc_sigiter_classify(2, 5, 5), GC_SIGITER_HIT);
	gc_assert_eq_int(gc_sigiter_classify(0, 5, 6), GC_SIGITER_EARLY);
	gc_assert_eq_int(gc_sigiter_classify(0, 5, 5), GC_SIGITER_MISS);
}

static void assert_progress(const struct gc_progress *p, uint64_t done, unsigned calls,
			    unsigned restarts, unsigned partials, unsigned eintrs)
{
	gc_assert_eq_uint(p->done, done);
	gc_assert_eq_uint(p->calls, calls);
	gc_assert_eq_uint(p->restarts, restarts);
	gc_assert_eq_uint(p->partials, partials);
	gc_assert_eq_uint(p->eintrs, eintrs);
}

/* write(2) style: each call returns what it did of the remaining request. */
static void test_progress_advance(void *fx)
{
	struct gc_progress p;

	(void)fx;
	gc_progress_init(&p, 10);
	gc_assert(!gc_progress_finished(&p));
	gc_assert_ok(gc_progress_advance(&p, 4));
	assert_progress(&p, 4, 1, 1, 1, 0);
	gc_assert_eq_uint(gc_progress_remaining(&p), 6);
	gc_assert_ok(gc_progress_advance(&p, -EINTR));
	assert_progress(&p, 4, 2, 2, 1, 1);
	/* Impossible reports are refused and change nothing. */
	gc_assert_errno(gc_progress_advance(&p, 7), EPROTO);
	gc_assert_errno(gc_progress_advance(&p, 0), EPROTO);
	gc_assert_errno(gc_progress_advance(&p, -5000), EPROTO);
	gc_assert_errno(gc_progress_advance(&p, INT64_MIN), EPROTO);
	/* A real error is handed back, unrecorded. */
	gc_assert_errno(gc_progress_advance(&p, -EIO), EIO);
	assert_progress(&p, 4, 2, 2, 1, 1);
	gc_assert_ok(gc_progress_advance(&p, 6));
	assert_progress(&p, 10, 3, 2, 1, 1);
	gc_assert(gc_progress_finished(&p));
	gc_assert_errno(gc_progress_advance(&p, 1), EPROTO);
	gc_assert_ok(gc_progress_advance(&p, 0)); /* an empty request may return 0 */
	gc_progress_init(&p, 0);
	gc_assert(gc_progress_finished(&p));
	gc_assert_ok(gc_progress_advance(&p, 0));
}

/* KFD n_success style: each call reports the cumulative total done. */
static void test_progress_report(void *fx)
{
	struct gc_progress p;

	(void)fx;
	gc_progress_init(&p, 4);
	gc_assert_errno(gc_progress_report(&p, -EINTR, 1), EINTR);
	assert_progress(&p, 1, 1, 1, 1, 0);
	gc_assert_errno(gc_progress_report(&p, -EINTR, 1), EINTR);
	assert_progress(&p, 1, 2, 2, 1, 1);
	gc_assert_errno(gc_progress_report(&p, -EINTR, 0), EPROTO); /* backwards */
	gc_assert_errno(gc_progress_report(&p, -EINTR, 5), EPROTO); /* beyond total */
	gc_assert_errno(gc_progress_report(&p, 0, 3), EPROTO);      /* success, work left */
	gc_assert_errno(gc_progress_report(&p, 1, 4), EPROTO);      /* not 0 or -errno */
	assert_progress(&p, 1, 2, 2, 1, 1);
	gc_assert_errno(gc_progress_report(&p, -ENOMEM, 2), ENOMEM);
	assert_progress(&p, 2, 3, 3, 2, 1);
	gc_assert_ok(gc_progress_report(&p, 0, 4));
	assert_progress(&p, 4, 4, 3, 2, 1);
	gc_assert(gc_progress_finished(&p));
}

static bool sig_blocked(int signo)
{
	sigset_t cur;

	gc_assert_eq_int(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	return sigismember(&cur, signo);
}

static void set_mask(int how, int signo)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, signo);
	gc_assert_eq_int(pthread_sigmask(how, &set, NULL), 0);
}

/* Start/stop bookkeeping: EBUSY, bad cfgs, the old action and mask restored. */
static void test_storm_lifecycle(void *fx)
{
	static const struct gc_storm_cfg far = { .interval_ns = 3600000000000ull };
	static struct gc_storm s, s2; /* static: still valid if an assert leaves early */
	static struct gc_sigiter it;
	const int sig = SIGRTMIN + 2;
	struct sigaction old;

	(void)fx;
	gc_assert_errno(gc_storm_start(&s, &(struct gc_storm_cfg){ .signo = SIGKILL }), EINVAL);
	gc_assert_errno(gc_storm_start(&s, &(struct gc_storm_cfg){ .interval_ns = 999 }), EINVAL);
	gc_assert(gc_storm_current() == NULL);
	gc_assert_syscall(sigaction(sig, &(struct sigaction){ .sa_handler = SIG_IGN }, NULL));
	set_mask(SIG_BLOCK, sig);

	gc_assert_ok(gc_storm_start(&s, &far));
	gc_assert(gc_storm_current() == &s);
	gc_assert(!sig_blocked(sig));
	gc_assert_errno(gc_storm_start(&s2, &far), EBUSY);
	gc_assert_errno(gc_sigiter_begin(&it, NULL), EBUSY);
	gc_assert_syscall(sigaction(sig, NULL, &old));
	gc_assert(old.sa_flags & SA_SIGINFO);
	gc_assert_f(!(old.sa_flags & SA_RESTART), "the storm's handler must not restart calls");
	gc_assert_ok(gc_storm_stop(&s));
	gc_assert_ok(gc_storm_stop(&s)); /* twice is harmless */

	gc_assert(gc_storm_current() == NULL);
	gc_assert_f(sig_blocked(sig), "the signal was blocked before start: stop must re-block");
	gc_assert_syscall(sigaction(sig, NULL, &old));
	gc_assert_f(old.sa_handler == SIG_IGN, "stop must restore the action found at start");
	gc_assert_eq_uint(gc_storm_counts(&s).delivered, 0);
	set_mask(SIG_UNBLOCK, sig);
	gc_assert_syscall(sigaction(sig, &(struct sigaction){ .sa_handler = SIG_DFL }, NULL));
}

/* The storm signal's handler flags right now, as sigaction() reports them. */
static int storm_sa_flags(void)
{
	struct sigaction cur;

	gc_assert_syscall(sigaction(GC_STORM_DEFAULT_SIGNO, NULL, &cur));
	return cur.sa_flags;
}

/* A sweep's cycle: counts its calls, sleeps 200 us, returns false at call stop_at. */
struct sweep_count {
	unsigned calls;
	unsigned stop_at;  /* UINT_MAX: never */
	bool in_order;     /* every call got i == calls so far, under a running storm s */
	unsigned restarts; /* calls that found the handler installed with SA_RESTART */
};

static bool count_cycle(void *ctx, struct gc_storm *s, unsigned i)
{
	struct sweep_count *c = ctx;
	struct timespec ts = { .tv_nsec = 200000 };

	c->in_order &= i == c->calls && gc_storm_current() == s;
	c->restarts += !!(storm_sa_flags() & SA_RESTART);
	c->calls++;
	nanosleep(&ts, NULL); /* EINTR is the storm's doing: nothing to check */
	return i != c->stop_at;
}

#define SWEEP_PER_PERIOD 4u

/*
 * interrupt.h: per_period cycles under a storm of each period of
 * gc_storm_sweep_ns, each storm started on s before its cycles and stopped
 * after them; and gc_storm_sweep_assert() passes on such a sweep.
 */
static void test_storm_sweep(void *fx)
{
	static struct gc_storm s; /* static: still valid if an assert leaves early */
	struct sweep_count c = { .stop_at = UINT_MAX, .in_order = true };
	struct gc_storm_sweep sw = { .cycle = count_cycle, .ctx = &c,
				     .per_period = SWEEP_PER_PERIOD };

	(void)fx;
	gc_storm_sweep(&s, &sw);
	gc_storm_sweep_report(&sw, "storm-sweep");
	gc_assert(gc_storm_current() == NULL);
	gc_assert_ok(sw.storm_err);
	gc_assert_eq_uint(sw.cycles, GC_STORM_SWEEP_PERIODS * SWEEP_PER_PERIOD);
	gc_assert_eq_uint(c.calls, sw.cycles);
	gc_assert_f(c.in_order, "a cycle got the wrong index or ran with no storm on s");
	gc_assert_eq_uint(c.restarts, 0); /* the default: no SA_RESTART */
	gc_assert_cmpuint(sw.delivered, >, 0);
	gc_storm_sweep_assert(&sw);
}

static void sweep_assert_child(void *arg)
{
	gc_storm_sweep_assert(arg);
}

/*
 * interrupt.h: the sweep stops early, with no storm running, after a cycle
 * that returned false; gc_storm_sweep_assert() then fails (cycles short).
 */
static void test_storm_sweep_stop(void *fx)
{
	static struct gc_storm s;
	/* first call, end of the first period, inside the second, inside the last */
	static const unsigned stops[] = { 0, 3, 5, 18 };

	(void)fx;
	for (size_t k = 0; k < sizeof(stops) / sizeof(stops[0]); k++) {
		struct sweep_count c = { .stop_at = stops[k], .in_order = true };
		struct gc_storm_sweep sw = { .cycle = count_cycle, .ctx = &c,
					     .per_period = SWEEP_PER_PERIOD };

		gc_storm_sweep(&s, &sw);
		gc_assert(gc_storm_current() == NULL);
		gc_assert_ok(sw.storm_err);
		gc_assert_eq_uint(sw.cycles, stops[k] + 1);
		gc_assert_eq_uint(c.calls, stops[k] + 1);
		gc_assert(c.in_order);
		gc_expect_child_exit(sweep_assert_child, &sw, GC_EXIT_FAILURE, 10000);
	}
}

static struct gc_soak *sweep_soak(void)
{
	return gc_soak_start(&(struct gc_soak_cfg){
		.name = "sweep", .cycle = "a 200 us sleep under a storm",
		.cycles = GC_STORM_SWEEP_PERIODS * SWEEP_PER_PERIOD, .quick = 3 });
}

/*
 * interrupt.h: a soaked sweep runs exactly one sweep at level standard;
 * it stops at the level's cycles (quick: 3, inside the first period) and at
 * a cycle that returned false, counting the cycles that ran.
 */
static void test_storm_sweep_soak(void *fx)
{
	static struct gc_storm s;
	static const struct { const char *level; unsigned stop_at, cycles, soaked; } cases[] = {
		{ "standard", UINT_MAX, GC_STORM_SWEEP_PERIODS * SWEEP_PER_PERIOD,
		  GC_STORM_SWEEP_PERIODS * SWEEP_PER_PERIOD },
		{ "quick", UINT_MAX, 3, 3 },
		{ "standard", 5, 6, 5 }, /* the failed cycle ran, but was not done */
	};

	(void)fx;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		struct sweep_count c = { .stop_at = cases[k].stop_at, .in_order = true };
		struct gc_storm_sweep sw = { .cycle = count_cycle, .ctx = &c,
					     .per_period = SWEEP_PER_PERIOD };
		struct gc_soak *soak;

		gc_assert_syscall(setenv(GC_LEVEL_ENV, cases[k].level, 1));
		soak = sweep_soak();
		gc_storm_sweep_soak(&s, &sw, soak);
		gc_assert(gc_storm_current() == NULL);
		gc_assert_ok(sw.storm_err);
		gc_assert_eq_uint(sw.cycles, cases[k].cycles);
		gc_assert_eq_uint(c.calls, cases[k].cycles);
		gc_assert_eq_uint(gc_soak_count(soak), cases[k].soaked);
		gc_soak_end(soak);
	}
	unsetenv(GC_LEVEL_ENV);
}

/*
 * interrupt.h: with cfg.sa_restart (storms, sweeps and sigiter alike) the
 * handler is installed with SA_RESTART; without it, not; stop restores the
 * old action.
 */
static void test_storm_sa_restart_flag(void *fx)
{
	static const struct gc_storm_cfg far = { .interval_ns = 3600000000000ull,
						 .sa_restart = true };
	static struct gc_storm s;
	static struct gc_sigiter it;
	struct sweep_count c = { .stop_at = UINT_MAX, .in_order = true };
	struct gc_storm_sweep sw = { .cycle = count_cycle, .ctx = &c, .per_period = 2,
				     .sa_restart = true };

	(void)fx;
	gc_assert_ok(gc_storm_start(&s, &far));
	gc_assert_f(storm_sa_flags() & SA_RESTART, "cfg.sa_restart: no SA_RESTART on the handler");
	gc_assert(storm_sa_flags() & SA_SIGINFO);
	gc_assert_ok(gc_storm_stop(&s));
	gc_assert_f(!(storm_sa_flags() & SA_RESTART), "stop left the storm's SA_RESTART behind");

	gc_assert_ok(gc_sigiter_begin(&it, &(struct gc_sigiter_cfg){ .sa_restart = true }));
	gc_assert_f(storm_sa_flags() & SA_RESTART, "sigiter cfg.sa_restart: no SA_RESTART");
	gc_assert_ok(gc_sigiter_end(&it));
	gc_assert_ok(gc_sigiter_begin(&it, NULL));
	gc_assert_f(!(storm_sa_flags() & SA_RESTART), "sigiter's default must not restart calls");
	gc_assert_ok(gc_sigiter_end(&it));

	gc_storm_sweep(&s, &sw);
	gc_storm_sweep_assert(&sw);
	gc_assert_eq_uint(c.restarts, c.calls); /* every storm of the sweep had it */
}

/* A probe's results, as gc_storm_probe_restart() fills them in. */
static struct gc_restart_probe probe_result(long n, int err, uint64_t landed, bool wrote,
					    bool guard_expired, int queued)
{
	return (struct gc_restart_probe){
		.signals = 3, .guard_ns = GC_RESTART_PROBE_GUARD_NS, .n = n, .err = err,
		.landed = landed, .wrote = wrote, .guard_expired = guard_expired,
		.bytes_ok = n == GC_RESTART_PROBE_LEN, .queued = queued,
	};
}

/* What a probe's results mean (interrupt.h, gc_restart_verdict). */
static void test_restart_probe_verdict(void *fx)
{
	const int len = GC_RESTART_PROBE_LEN;
	struct gc_restart_probe p;

	(void)fx;
	p = probe_result(len, 0, 3, true, false, 0);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_RESTARTED);
	p = probe_result(len, 0, 7, true, false, 0);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_RESTARTED);
	/* Too few signals inside: the read may never have been interrupted at all. */
	p = probe_result(len, 0, 2, true, false, 0);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_UNPROVEN);
	p = probe_result(len, 0, 0, true, true, 0);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_UNPROVEN);
	/* EINTR, nothing consumed: the helper wrote nothing, or its bytes are all still there. */
	p = probe_result(-1, EINTR, 1, false, false, 0);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_EINTR);
	p = probe_result(-1, EINTR, 1, true, false, len);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_EINTR);
	p = probe_result(-1, EINTR, 0, false, false, 0); /* no signal inside: from nowhere */
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_BROKEN);
	p = probe_result(-1, EINTR, 1, true, false, len - 1); /* a byte went missing */
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_BROKEN);
	p = probe_result(-1, EIO, 1, false, false, 0);
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_BROKEN);
	p = probe_result(len - 1, 0, 3, true, false, 1); /* short read */
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_BROKEN);
	p = probe_result(len, 0, 3, true, false, 0);
	p.bytes_ok = false; /* the right count of the wrong bytes */
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_BROKEN);
	p = probe_result(len, 0, 3, false, false, 0); /* bytes nobody wrote */
	gc_assert_eq_int(gc_restart_probe_verdict(&p), GC_RESTART_BROKEN);
}

/* One real probe under a 1 ms storm; its verdict, with the description on failure. */
static enum gc_restart_verdict probe_once(bool sa_restart, char *why, size_t len)
{
	static struct gc_storm s; /* static: still valid if an assert leaves early */
	struct gc_restart_probe p = { .signals = 5 };

	gc_assert_ok(gc_storm_probe_restart(&s, &(struct gc_storm_cfg){
		.interval_ns = 1000000, .sa_restart = sa_restart }, &p));
	gc_assert(gc_storm_current() == NULL);
	gc_restart_probe_str(&p, why, len);
	gc_info("sa_restart %s: %s", sa_restart ? "on" : "off", why);
	return gc_restart_probe_verdict(&p);
}

/*
 * The flag, for real: of a blocked read(2) of a pipe (a slow device), signal(7)
 * says "[...] then the call is automatically restarted after the signal
 * handler returns if the SA_RESTART flag was used; otherwise the call fails
 * with the error EINTR:" [src mkerrisk/man-pages man7/signal.7 @
 * 091fbf1fef48] (man-pages 5.13). Under a storm without the
 * flag the probe's read must give EINTR; with it, the read must sit through
 * 5 signals and return the bytes. A storm that ignored cfg.sa_restart fails
 * the second check (EINTR), one that always set it the first.
 */
static void test_storm_sa_restart_real(void *fx)
{
	char why[256];

	(void)fx;
	gc_assert_f(probe_once(false, why, sizeof(why)) == GC_RESTART_EINTR,
		    "without SA_RESTART: %s", why);
	gc_assert_f(probe_once(true, why, sizeof(why)) == GC_RESTART_RESTARTED,
		    "with SA_RESTART: %s", why);
}

static void after_each(void *fx)
{
	struct gc_storm *s = gc_storm_current();

	(void)fx;
	if (s)
		gc_storm_stop(s);
}

static const struct gc_subtest subtests[] = {
	{ "sigiter-cfg", test_sigiter_cfg, "defaults filled in; impossible cfgs are EINVAL" },
	{ "sigiter-delays", test_sigiter_delays, "first x growth^step, capped, saturating" },
	{ "sigiter-decide", test_sigiter_decide, "stop on an uninterrupted pass or max passes" },
	{ "sigiter-classify", test_sigiter_classify, "HIT / MISS / EARLY from a pass's counters" },
	{ "progress-advance", test_progress_advance, "write(2)-style deltas; impossible: EPROTO" },
	{ "progress-report", test_progress_report, "n_success-style totals; backwards: EPROTO" },
	{ "storm-lifecycle", test_storm_lifecycle, "EBUSY, EINVAL, old action and mask restored" },
	{ "storm-sweep", test_storm_sweep, "per_period cycles under each of the 5 storms" },
	{ "storm-sweep-stop", test_storm_sweep_stop, "a cycle returning false stops the sweep" },
	{ "storm-sweep-soak", test_storm_sweep_soak, "sweeps as long as the level's soak says" },
	{ "storm-sa-restart-flag", test_storm_sa_restart_flag,
	  "cfg.sa_restart puts SA_RESTART on the handler of storms, sweeps and sigiter" },
	{ "restart-probe-verdict", test_restart_probe_verdict,
	  "restarted / EINTR / unproven / broken from a probe's results" },
	{ "storm-sa-restart-real", test_storm_sa_restart_real,
	  "a pipe read under a storm: EINTR without SA_RESTART, restarted with it" },
	{ 0 }
};

static const struct gc_fixture fixture = { .after_each = after_each };

static const char *const soaks[] = { "storm-sweep-soak", NULL };

GC_MAIN(.name = "unit_interrupt", .description = "lib/interrupt pure logic",
	.subtests = subtests, .fixture = &fixture, .soaks = soaks)
