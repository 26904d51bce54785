/* SPDX-License-Identifier: MIT */
/*
 * Signal storms aimed at one thread, and the counters that say whether a
 * signal really landed inside the call under test.
 *
 *     struct gc_storm s;
 *     gc_assert_ok(gc_storm_start(&s, &(struct gc_storm_cfg){ .interval_ns = 100000 }));
 *     gc_storm_enter(&s);
 *     r = read(fd, buf, n);
 *     hit = gc_storm_leave(&s);
 *     gc_storm_stop(&s);
 *     gc_storm_require_hits(&s);
 *
 * A periodic POSIX timer (CLOCK_MONOTONIC, SIGEV_THREAD_ID) sends a real-time
 * signal to the thread that called gc_storm_start(). By default the handler is
 * installed without SA_RESTART, so a blocking call returns EINTR (or a partial
 * count) instead of being restarted behind the caller's back.
 *
 * With cfg.sa_restart (storms, sweeps and sigiter alike) it is installed with
 * SA_RESTART, as most programs run. signal(7): "If a blocked call to one of the
 * following interfaces is interrupted by a signal handler, then the call is
 * automatically restarted after the signal handler returns if the SA_RESTART
 * flag was used; otherwise the call fails with the error EINTR:" [src
 * mkerrisk/man-pages man7/signal.7 @ 091fbf1fef48]. What the kernel restarts
 * is a call that returned -ERESTARTSYS (x86 handle_signal(): `case
 * -ERESTARTSYS: if (!(ksig->ka.sa.sa_flags & SA_RESTART)) { regs->ax =
 * -EINTR; break; }` [src torvalds/linux arch/x86/kernel/signal.c @
 * 00ed905ab8e5]); signal(7)'s exceptions ("The following interfaces are
 * never restarted after being interrupted by a signal handler, regardless of
 * the use of SA_RESTART; they always fail with the error EINTR when
 * interrupted by a signal handler:" nanosleep, poll, epoll_wait...) and a
 * kernel path that returns -EINTR itself still give EINTR.
 * gc_storm_probe_restart() shows which mode a storm really is in.
 *
 * Rules:
 *  - One storm (or sigiter) per thread at a time; enter/leave/stop are called
 *    from the thread that started it.
 *  - Storms in several threads at once must use distinct signals, or stop in
 *    the reverse order of their start (each restores the action it found).
 *  - The struct must outlive the storm. A subtest that can fail (longjmp out)
 *    while a storm runs must keep the struct where the fixture's after_each
 *    can find it and call gc_storm_stop_leftover(); a struct on the
 *    failed subtest's stack is gone by then. Better: stop the storm before
 *    asserting anything.
 *  - A storm does not survive fork(): the child has no timer. Start a new one
 *    there if needed (gc_storm_current() still names the parent's copy).
 *
 * The one piece of global state this library owns is a thread-local pointer
 * to the calling thread's active storm: the signal handler has no other way
 * to find it.
 */
#ifndef GPUCONFORM_INTERRUPT_H
#define GPUCONFORM_INTERRUPT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core.h"

/* Defaults for a zero field of struct gc_storm_cfg. */
#define GC_STORM_DEFAULT_SIGNO (SIGRTMIN + 2)
#define GC_STORM_DEFAULT_INTERVAL_NS 100000ull /* 100 us */
/* A periodic storm faster than this would keep the thread in its handler. */
#define GC_STORM_MIN_INTERVAL_NS 1000ull

struct gc_storm_cfg {
	int signo;            /* 0: GC_STORM_DEFAULT_SIGNO; never SIGKILL/SIGSTOP */
	uint64_t interval_ns; /* period; 0: default; below GC_STORM_MIN_INTERVAL_NS: -EINVAL */
	uint64_t first_ns;    /* delay of the first signal; 0: interval_ns */
	bool one_shot;        /* one signal, after first_ns, then none */
	bool sa_restart;      /* handler with SA_RESTART (see above); false: without */
};

/* A snapshot of a storm's counters. */
struct gc_storm_counts {
	uint64_t delivered;     /* signals the handler saw from this storm's timer */
	uint64_t landed_inside; /* of those, arrived between enter and leave */
	uint64_t overruns;      /* expirations the kernel merged into one signal */
	uint64_t calls;         /* enter/leave brackets closed */
	uint64_t calls_hit;     /* brackets with at least one signal inside */
};

/* Treat as opaque; read it through gc_storm_counts(). */
struct gc_storm {
	/* written by the signal handler: lock-free atomics only */
	atomic_ulong delivered;
	atomic_ulong landed_inside;
	atomic_ulong overruns;
	atomic_ulong bracket_hits; /* signals inside the open bracket */
	atomic_ulong backstop_ns;  /* sigiter: re-arm once, this much later, on a signal */
	atomic_int inside;
	/* owned by the storm's thread */
	uint64_t calls;
	uint64_t calls_hit;
	int signo;
	bool running;
	bool sa_restart; /* the handler was installed with SA_RESTART */
	bool timer_made;
	bool unblocked; /* the signal was blocked at start: start unblocked it */
	timer_t timer;
	struct sigaction old_action;
};

/*
 * Create the timer, install the handler (SA_SIGINFO; SA_RESTART only with
 * cfg->sa_restart), unblock the signal in this thread if needed, arm.
 * Counters start at zero.
 * -EINVAL: bad cfg; -EBUSY: this thread already has a running storm;
 * -errno of timer_create/sigaction/timer_settime otherwise (nothing left behind).
 */
int gc_storm_start(struct gc_storm *s, const struct gc_storm_cfg *cfg);

/*
 * Disarm and delete the timer, discard the signal if still pending (any
 * instance of signo, whoever sent it), restore the old action and mask. Counters stay readable. Safe on a stopped storm
 * (returns 0). -errno of the first step that failed (the others still run).
 */
int gc_storm_stop(struct gc_storm *s);

/* The calling thread's running storm, or NULL (for fixture cleanup). */
struct gc_storm *gc_storm_current(void);
/*
 * For a fixture's after_each: stop the storm a failed subtest left running on
 * this thread (gc_storm_current(), so its struct must outlive the subtest),
 * with a warning. True when there was one.
 */
bool gc_storm_stop_leftover(void);

/*
 * Bracket the call under test. Compiler fences keep the call between them;
 * keep the bracket to the call itself, so that a signal inside came during it.
 * gc_storm_leave() returns whether a signal arrived since gc_storm_enter().
 * A signal counted inside may still have reached the thread just before the
 * call entered the kernel or just after it returned (timer signals arrive
 * tens of us late on VMs): EINTR implies a hit, a hit does not imply EINTR.
 * Assert that the call completed, or gave EINTR with no effect; never that a
 * hit means EINTR.
 */
void gc_storm_enter(struct gc_storm *s);
bool gc_storm_leave(struct gc_storm *s);

struct gc_storm_counts gc_storm_counts(const struct gc_storm *s);

/* `delivered 12, landed inside 9 (in 9 of 10 calls), overruns 0` into buf. */
const char *gc_storm_counts_str(const struct gc_storm *s, char *buf, size_t len);

/* gc_info() of the counts, prefixed by what (and `handler with SA_RESTART` if so). */
void gc_storm_report(const struct gc_storm *s, const char *what);

/*
 * Fail the current subtest unless at least one bracketed call had a signal
 * land inside it: a test that was never interrupted tested nothing.
 */
#define gc_storm_require_hits(s)                                                      \
	do {                                                                          \
		char gc_sb__[192];                                                    \
		if (gc_storm_counts(s).calls_hit == 0)                                \
			gc_fail("no signal landed inside any bracketed call: %s",    \
				gc_storm_counts_str((s), gc_sb__, sizeof(gc_sb__)));  \
	} while (0)

/* ------------------------------------------------------------- storm sweep */

/*
 * The same cycle, again and again, under storms of a few periods one after
 * the other (20, 50, 130, 370 and 1000 us: apart enough that the signals
 * drift across the phases of the cycle's calls).
 *
 *     static struct gc_storm s;
 *     struct gc_storm_sweep sw = { .cycle = one_cycle, .ctx = &c, .per_period = 20 };
 *     gc_storm_sweep(&s, &sw);
 *     ... undo what the cycles left, with no storm running ...
 *     gc_storm_sweep_report(&sw, what);
 *     gc_storm_sweep_assert(&sw);
 *
 * A cycle brackets its own calls (gc_storm_enter/leave on s), records its
 * failures in ctx and returns false rather than asserting, which stops the
 * sweep: a longjmp out would leave the storm running (see the rules above).
 */
#define GC_STORM_SWEEP_PERIODS 5
/* The storm periods of a sweep, in the order they run (ns). */
extern const uint64_t gc_storm_sweep_ns[GC_STORM_SWEEP_PERIODS];

struct gc_storm_sweep {
	/* one cycle; i counts the sweep's cycles from 0; false stops the sweep */
	bool (*cycle)(void *ctx, struct gc_storm *s, unsigned i);
	void *ctx;
	unsigned per_period; /* cycles under each storm period */
	bool sa_restart;     /* every storm's handler with SA_RESTART (gc_storm_cfg) */
	/* results: zero before the sweep */
	uint64_t delivered; /* signals the storms delivered, all periods together */
	uint64_t cycles;    /* cycles run, the one that returned false included */
	int storm_err;      /* first -errno of gc_storm_start/stop; 0: none */
};

/*
 * per_period cycles under a storm of each period of gc_storm_sweep_ns, each
 * storm started on s before its cycles and stopped after them. Stops early,
 * with no storm running, after a cycle that returned false or at a storm
 * that failed to start or stop (storm_err). s must outlive the sweep (see
 * the rules above).
 */
void gc_storm_sweep(struct gc_storm *s, struct gc_storm_sweep *sw);

/*
 * gc_storm_sweep() under a soak (lib/soak.h): whole sweeps one after the
 * other, each cycle claimed from the soak, until the level's cycles are
 * done, a cycle returns false or a storm fails; sw->cycles then counts the
 * cycles that ran. A soak of one sweep's cycles (GC_STORM_SWEEP_PERIODS x
 * per_period) runs exactly one sweep at level standard.
 */
struct gc_soak;
void gc_storm_sweep_soak(struct gc_storm *s, struct gc_storm_sweep *sw, struct gc_soak *soak);

/* gc_info() of signals delivered, cycles run and the periods, prefixed by what. */
void gc_storm_sweep_report(const struct gc_storm_sweep *sw, const char *what);

/*
 * Fail the current subtest unless every storm started and stopped and every
 * cycle ran: storm_err == 0, cycles == GC_STORM_SWEEP_PERIODS * per_period.
 */
void gc_storm_sweep_assert(const struct gc_storm_sweep *sw);

/* ------------------------------------------------------------------ sigiter */

/*
 * Interruptible iteration (IGT's sigiter): run the same call again and again,
 * each pass under a one-shot timer whose delay grows (first_delay_ns, then
 * x growth per step, capped at max_delay_ns), until a pass completes with no
 * signal inside it: the call has then been seen interrupted at every depth up
 * to its own length. The call must be repeatable.
 *
 *     struct gc_sigiter it;
 *     gc_assert_ok(gc_sigiter_begin(&it, &cfg));
 *     while (gc_sigiter_next(&it)) {
 *             gc_sigiter_enter(&it);
 *             r = call();
 *             hit = gc_sigiter_leave(&it);
 *             ... check r: EINTR only if hit; a complete result otherwise ...
 *     }
 *     gc_assert_ok(gc_sigiter_end(&it));
 *     gc_assert(it.completed);
 *
 * A pass ends in one of three ways: HIT (a signal landed inside; the call may
 * still have completed if it landed just before or after the syscall), MISS
 * (the call finished before the timer: the iteration is complete) or EARLY
 * (the signal arrived outside the bracket but before leave, e.g. while arming
 * a very short delay; the pass proves nothing and the next one uses the next
 * delay). gc_sigiter_enter() re-arms with the next delay, without running a
 * pass, when the timer already fired while it armed it.
 *
 * A signal can land between enter and the moment the call blocks in the
 * kernel (seen on VMs in a few % of passes of a few us): the call would then
 * wait with no signal to come. So the handler re-arms the timer once per pass
 * as a backstop, max(delay, GC_SIGITER_BACKSTOP_NS) later (long enough not to
 * fire while the handler itself re-arms): a pass sees at most two signals,
 * and leave cancels whatever is still armed. A call that restarts itself on
 * EINTR is thus interrupted at most twice per pass, never livelocked.
 */
struct gc_sigiter_cfg {
	int signo;               /* 0: GC_STORM_DEFAULT_SIGNO */
	uint64_t first_delay_ns; /* 0: GC_SIGITER_DEFAULT_FIRST_NS */
	unsigned growth;         /* 0: 2; 1 or more than 1024: -EINVAL */
	uint64_t max_delay_ns;   /* 0: GC_SIGITER_DEFAULT_MAX_NS; below first: -EINVAL */
	unsigned max_passes;     /* 0: GC_SIGITER_DEFAULT_PASSES */
	bool sa_restart;         /* handler with SA_RESTART, as gc_storm_cfg's */
};

#define GC_SIGITER_DEFAULT_FIRST_NS 1000ull            /* 1 us */
#define GC_SIGITER_DEFAULT_MAX_NS 1000000000ull        /* 1 s */
#define GC_SIGITER_DEFAULT_PASSES 64u
#define GC_SIGITER_BACKSTOP_NS 1000000ull               /* 1 ms */

enum gc_sigiter_outcome {
	GC_SIGITER_NONE,  /* no pass yet */
	GC_SIGITER_HIT,
	GC_SIGITER_MISS,
	GC_SIGITER_EARLY,
};

enum gc_sigiter_verdict {
	GC_SIGITER_AGAIN,     /* run another pass */
	GC_SIGITER_COMPLETED, /* the last pass was not interrupted */
	GC_SIGITER_EXHAUSTED, /* max_passes ran, every one interrupted or early */
};

struct gc_sigiter {
	struct gc_storm storm;
	struct gc_sigiter_cfg cfg; /* with defaults filled in */
	unsigned step;             /* index into the delay schedule */
	uint64_t delay_ns;         /* delay of the current pass */
	uint64_t delivered_armed;  /* storm.delivered once the pass was armed */
	enum gc_sigiter_outcome last;
	int error;                 /* first -errno of a timer operation */
	/* results */
	unsigned passes;             /* passes run (enter/leave pairs) */
	unsigned passes_interrupted; /* HIT passes */
	unsigned passes_early;       /* EARLY passes and re-arms in enter */
	bool completed;              /* ended by a MISS pass */
};

/* Pure logic, no signals: unit-tested directly. */
/* cfg with defaults filled in into out; -EINVAL for an impossible one. */
int gc_sigiter_cfg_normalize(const struct gc_sigiter_cfg *cfg, struct gc_sigiter_cfg *out);
/* Delay of schedule step (0-based) for a normalized cfg: first x growth^step, capped. */
uint64_t gc_sigiter_delay_ns(const struct gc_sigiter_cfg *cfg, unsigned step);
/* What follows `passes` passes, the last of which ended in `last`. */
enum gc_sigiter_verdict gc_sigiter_decide(const struct gc_sigiter_cfg *cfg, unsigned passes,
					  enum gc_sigiter_outcome last);
/* HIT / MISS / EARLY from a pass's counters (delivered values from storm.delivered). */
enum gc_sigiter_outcome gc_sigiter_classify(uint64_t hits_inside, uint64_t delivered_armed,
					    uint64_t delivered_at_leave);

/* Like gc_storm_start() (cfg NULL: all defaults), but nothing is armed yet. */
int gc_sigiter_begin(struct gc_sigiter *it, const struct gc_sigiter_cfg *cfg);
/* True while another pass should run; sets it->completed when done. */
bool gc_sigiter_next(struct gc_sigiter *it);
/* Arms the pass's one-shot timer and opens the bracket: make the call right after. */
void gc_sigiter_enter(struct gc_sigiter *it);
/* Disarms the timer (no signal from this pass arrives after it) and returns whether it hit. */
bool gc_sigiter_leave(struct gc_sigiter *it);
/* Stops the storm; 0, or the first -errno any timer operation gave. */
int gc_sigiter_end(struct gc_sigiter *it);

/* ----------------------------------------------------------- restart probe */

/*
 * Which mode is a storm of this cfg really in? One blocking read(2) of an
 * empty pipe, bracketed, under a storm started on s from cfg; a helper thread
 * writes GC_RESTART_PROBE_LEN bytes into the pipe once `signals` signals have
 * landed inside the read (or once guard_ns has passed, so that a storm that
 * never fires cannot hang the caller). signal(7) lists read(2) on a pipe among
 * the interfaces of its sentence "If a blocked call to one of the following
 * interfaces is interrupted by a signal handler, then the call is
 * automatically restarted after the signal handler returns if the SA_RESTART
 * flag was used; otherwise the call fails with the error EINTR:" [src
 * mkerrisk/man-pages man7/signal.7 @ 091fbf1fef48]. So with SA_RESTART the
 * read keeps blocking through the signals and returns the bytes
 * (GC_RESTART_RESTARTED); without it, it returns -1/EINTR at the first signal
 * and the helper writes nothing (GC_RESTART_EINTR).
 *
 *     static struct gc_storm s;
 *     struct gc_restart_probe p = { .signals = 5 };
 *     gc_assert_ok(gc_storm_probe_restart(&s, &(struct gc_storm_cfg){ .sa_restart = true },
 *                                         &p));
 *     gc_assert_f(gc_restart_probe_verdict(&p) == GC_RESTART_RESTARTED, as_is,
 *                 gc_restart_probe_str(&p, buf, sizeof(buf)));
 *
 * (as_is: the format `%s`.)
 *
 * The storm is stopped and the helper joined before it returns: s's counters
 * are then those of the probe's storm alone.
 */
#define GC_RESTART_PROBE_LEN 16
#define GC_RESTART_PROBE_SIGNALS 3             /* default of signals */
#define GC_RESTART_PROBE_GUARD_NS 2000000000ull /* default of guard_ns: 2 s */

struct gc_restart_probe {
	unsigned signals;   /* landed inside the read before the helper writes; 0: default */
	uint64_t guard_ns;  /* the helper writes after this anyway; 0: default */
	/* (the probe writes the defaults it used back into these two) */
	/* results */
	long n;             /* what read() returned */
	int err;            /* its errno when n < 0 */
	uint64_t landed;    /* signals that landed inside the read */
	bool wrote;         /* the helper wrote its bytes */
	bool guard_expired; /* ... because guard_ns passed first */
	bool bytes_ok;      /* n == GC_RESTART_PROBE_LEN and they are the bytes written */
	int queued;         /* bytes left in the pipe after the read; -1: unknown */
};

enum gc_restart_verdict {
	GC_RESTART_RESTARTED, /* blocked through `signals` signals inside, then read the bytes */
	GC_RESTART_EINTR,     /* -1/EINTR with a signal inside; nothing consumed */
	GC_RESTART_UNPROVEN,  /* read the bytes, but fewer signals inside (the guard expired) */
	GC_RESTART_BROKEN,    /* anything else: short or wrong bytes, other errno, ... */
};

/*
 * 0 with p's results, or -errno of pipe2 / pthread_create / gc_storm_start /
 * gc_storm_stop (nothing left behind). cfg NULL: all defaults.
 */
int gc_storm_probe_restart(struct gc_storm *s, const struct gc_storm_cfg *cfg,
			   struct gc_restart_probe *p);

/* Pure logic, no signals: what p's results mean. */
enum gc_restart_verdict gc_restart_probe_verdict(const struct gc_restart_probe *p);

/* `read returned 16 after 5 signals landed inside it (..)` into buf. */
const char *gc_restart_probe_str(const struct gc_restart_probe *p, char *buf, size_t len);

/* ---------------------------------------------------------------- progress */

/*
 * Restart bookkeeping for a call that reports partial progress: restarted
 * from where it stopped until done. Two report styles:
 *  - delta (write(2)): gc_progress_advance() with what this call returned;
 *  - cumulative (KFD's n_success): gc_progress_report() with the new total.
 * Both refuse an impossible report with -EPROTO and leave p unchanged then.
 */
struct gc_progress {
	uint64_t done;
	uint64_t total;
	unsigned calls;    /* reports recorded */
	unsigned restarts; /* calls after which work remained (the call must be reissued) */
	unsigned partials; /* calls that made progress but did not finish */
	unsigned eintrs;   /* calls that were interrupted with no progress */
};

void gc_progress_init(struct gc_progress *p, uint64_t total);

static inline bool gc_progress_finished(const struct gc_progress *p)
{
	return p->done == p->total;
}

static inline uint64_t gc_progress_remaining(const struct gc_progress *p)
{
	return p->total - p->done;
}

/*
 * ret: what the call returned for a request of gc_progress_remaining() units:
 * a count > 0, -EINTR (interrupted, nothing done), or another -errno.
 * 0: recorded, EINTR included (reissue the call for what remains). -EPROTO,
 * unrecorded: ret > remaining, ret == 0 while work remains (a restartable call
 * that makes no progress never converges), or ret below -4095 (no errno).
 * Another negative ret is returned as it is, unrecorded.
 */
int gc_progress_advance(struct gc_progress *p, int64_t ret);

/*
 * ret: what the call returned (0 or -errno); done_now: the total completed so
 * far as the call reports it, after an error too. -EPROTO, unrecorded, when
 * done_now goes backwards or beyond total, or when ret == 0 but work remains
 * (success means everything was done). Otherwise the progress is recorded and
 * the result is 0 for success or -EINTR (reissue the call), ret for another
 * error.
 */
int gc_progress_report(struct gc_progress *p, int ret, uint64_t done_now);

#endif
