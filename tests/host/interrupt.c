// SPDX-License-Identifier: MIT
/*
 * host_interrupt: the interrupt contract on plain syscalls. A call that a
 * signal interrupts either completes, or fails with EINTR (or reports the
 * partial count it really did) with no other visible effect; restarting it
 * from what it reported converges on exactly the uninterrupted result.
 *
 * Every subtest runs its calls under a signal storm aimed at this thread
 * (lib/interrupt.h) and fails when no signal landed inside them. Experiments
 * record what happened and stop the storm (and join their threads) before
 * asserting anything: a failed assert leaves the subtest at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "interrupt.h"
#include "io.h"
#include "measure.h"

#define CANARY 0xa5
#define GUARD 16 /* canary bytes each side of a read buffer */
#define NS_PER_S 1000000000ull

/* ---------------------------------------------------------------- helpers */

/* Report the counts, then fail unless a signal landed inside a bracketed call. */
static void storm_verdict(const struct gc_storm *s, const char *what)
{
	gc_storm_report(s, what);
	gc_storm_require_hits(s);
}

static void make_pipe(int p[2])
{
	gc_assert_syscall(pipe2(p, O_CLOEXEC));
}

static void close_pipe(int p[2])
{
	close(p[0]);
	close(p[1]);
}

static int pipe_queued(int fd)
{
	int n = -1;

	gc_assert_syscall(ioctl(fd, FIONREAD, &n));
	return n;
}

static bool all_bytes(const uint8_t *b, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * NS_PER_S + (uint64_t)ts->tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / NS_PER_S),
		.tv_nsec = (long)(ns % NS_PER_S),
	};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ------------------------------------------------------- pipe-read-eintr */

#define READ_LEN 64
#define READ_ROUNDS 3
#define READ_SEED 0x5ead

struct read_round {
	ssize_t n;
	int err;
	bool hit;
	uint8_t buf[GUARD + READ_LEN + GUARD];
};

/* One blocking read of an empty pipe, bracketed, under a 1 ms storm. */
static void read_empty_pipe(struct gc_storm *s, int fd, struct read_round *rr)
{
	memset(rr->buf, CANARY, sizeof(rr->buf));
	gc_assert_ok(gc_storm_start(s, &(struct gc_storm_cfg){ .interval_ns = 1000000 }));
	gc_storm_enter(s);
	rr->n = read(fd, rr->buf + GUARD, READ_LEN);
	rr->err = errno;
	rr->hit = gc_storm_leave(s);
	gc_assert_ok(gc_storm_stop(s));
}

/* After the interrupted read: what is written next is all there, in order. */
static void check_pipe_intact(int p[2], unsigned round)
{
	uint8_t in[READ_LEN], out[READ_LEN];
	struct gc_mismatch mm;
	char msg[160];
	ssize_t n;

	gc_pattern_fill(out, sizeof(out), round * READ_LEN, READ_SEED);
	gc_assert_eq_int(write(p[1], out, sizeof(out)), READ_LEN);
	gc_assert_f(pipe_queued(p[0]) == READ_LEN,
		    "round %u: %d bytes queued after writing %d: the interrupted read took some",
		    round, pipe_queued(p[0]), READ_LEN);
	n = read(p[0], in, sizeof(in));
	gc_assert_eq_int(n, READ_LEN);
	gc_assert_f(gc_pattern_check(in, sizeof(in), round * READ_LEN, READ_SEED, &mm) < 0,
		    "round %u: %s", round, gc_mismatch_str(&mm, msg, sizeof(msg)));
	gc_assert_eq_int(pipe_queued(p[0]), 0);
}

static void test_pipe_read_eintr(void *fx)
{
	static struct gc_storm s;
	struct read_round rr;
	int p[2];

	(void)fx;
	make_pipe(p);
	for (unsigned round = 0; round < READ_ROUNDS; round++) {
		read_empty_pipe(&s, p[0], &rr);
		storm_verdict(&s, "pipe-read-eintr");
		gc_assert_f(rr.n == -1 && rr.err == EINTR,
			    "round %u: read of an empty pipe gave %zd (errno %d), want -1/EINTR",
			    round, rr.n, rr.err);
		gc_assert_f(rr.hit, "EINTR although no signal landed inside the read");
		gc_assert_f(all_bytes(rr.buf, sizeof(rr.buf), CANARY),
			    "round %u: the interrupted read wrote into its buffer", round);
		check_pipe_intact(p, round);
	}
	close_pipe(p);
}

/* -------------------------------------------------- pipe-read-sa-restart */

#define RESTART_SIGNALS 10 /* signals to land inside the read before its bytes come */

/*
 * Contract (signal(7), its section on the interruption of system calls and
 * library functions by signal handlers): "If a blocked call to one of the
 * following interfaces is interrupted by a signal handler, then the call is
 * automatically restarted after the signal handler returns if the SA_RESTART
 * flag was used; otherwise the call fails with the error EINTR: read(2),
 * readv(2), write(2), writev(2), and ioctl(2) calls on 'slow' devices. A
 * 'slow' device is one where the I/O call may block for an indefinite time,
 * for example, a terminal, pipe, or socket." [src mkerrisk/man-pages
 * man7/signal.7 @ 091fbf1fef48] (man-pages 5.13; its own double quotes around
 * slow made single here). pipe-read-eintr is the half without SA_RESTART.
 * Here, with it, one blocking read of an empty pipe sits through
 * RESTART_SIGNALS signals landing inside it, never returns EINTR, and returns
 * the bytes a helper thread writes after them, whole, leaving nothing queued
 * (lib/interrupt's restart probe). A storm that ignored SA_RESTART fails here
 * with -1/EINTR.
 */
static void test_pipe_read_sa_restart(void *fx)
{
	static struct gc_storm s;
	struct gc_restart_probe p = { .signals = RESTART_SIGNALS };
	char why[320];

	(void)fx;
	gc_assert_ok(gc_storm_probe_restart(&s, &(struct gc_storm_cfg){
		.interval_ns = 1000000, .sa_restart = true }, &p));
	storm_verdict(&s, "pipe-read-sa-restart");
	gc_restart_probe_str(&p, why, sizeof(why));
	gc_info("%s", why);
	gc_assert_f(!(p.n == -1 && p.err == EINTR), "the read returned EINTR although its "
		    "handler has SA_RESTART: %s", why);
	gc_assert_f(gc_restart_probe_verdict(&p) == GC_RESTART_RESTARTED, "not restarted "
		    "through %u signals: %s", RESTART_SIGNALS, why);
}

/* ---------------------------------------------------- pipe-write-partial */

#define WRITE_TOTAL (4u << 20)
#define WRITE_SEED 0x3717e
#define DRAIN_CHUNK (16u << 10)
#define DRAIN_PAUSE_NS 50000ull

struct drain {
	int fd;
	uint64_t got;        /* bytes read before EOF */
	int64_t bad_at;      /* stream offset of the first wrong byte, -1: none */
	struct gc_mismatch mm;
	int err;             /* errno of a failed read, 0: none */
};

/* Reader thread: drains slowly, checks every byte against its stream offset. */
static void *drain_thread(void *arg)
{
	uint8_t buf[DRAIN_CHUNK];
	struct drain *d = arg;
	ssize_t n;

	for (;;) {
		n = read(d->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			d->err = n < 0 ? errno : 0;
			return NULL;
		}
		if (d->bad_at < 0 &&
		    gc_pattern_check(buf, (size_t)n, d->got, WRITE_SEED, &d->mm) >= 0)
			d->bad_at = (int64_t)d->mm.file_offset;
		d->got += (uint64_t)n;
		sleep_ns(DRAIN_PAUSE_NS);
	}
}

struct write_run {
	struct gc_progress prog;
	int progress_err;      /* gc_progress_advance() refusal or write error */
	unsigned eintr_no_hit; /* EINTR with no signal inside the call */
};

/* Write src in full, resuming from what each interrupted write reported. */
static void write_all_stormed(struct gc_storm *s, int fd, const uint8_t *src,
			      struct write_run *w)
{
	gc_progress_init(&w->prog, WRITE_TOTAL);
	while (!gc_progress_finished(&w->prog) && !w->progress_err) {
		ssize_t n;
		int err;
		bool hit;

		gc_storm_enter(s);
		n = write(fd, src + w->prog.done, gc_progress_remaining(&w->prog));
		err = errno;
		hit = gc_storm_leave(s);
		if (n < 0 && err == EINTR && !hit)
			w->eintr_no_hit++;
		w->progress_err = gc_progress_advance(&w->prog, n < 0 ? -err : n);
	}
}

static void test_pipe_write_partial(void *fx)
{
	static struct gc_storm s;
	struct drain d = { .bad_at = -1 };
	struct write_run w = { 0 };
	static uint8_t src[WRITE_TOTAL];
	pthread_t reader;
	char msg[160];
	int p[2], r;

	(void)fx;
	gc_pattern_fill(src, WRITE_TOTAL, 0, WRITE_SEED);
	make_pipe(p);
	d.fd = p[0];
	r = pthread_create(&reader, NULL, drain_thread, &d);
	if (r)
		close_pipe(p);
	gc_assert_eq_int(r, 0);
	/* Whatever happens, the reader sees EOF and is joined before any assert. */
	r = gc_storm_start(&s, &(struct gc_storm_cfg){ .interval_ns = 200000 });
	if (!r) {
		write_all_stormed(&s, p[1], src, &w);
		r = gc_storm_stop(&s);
	}
	close(p[1]);
	pthread_join(reader, NULL);
	close(p[0]);

	gc_assert_ok(r);
	storm_verdict(&s, "pipe-write-partial");
	gc_info("writes: %u calls, %u partial, %u EINTR; reader got %" PRIu64 " bytes",
		w.prog.calls, w.prog.partials, w.prog.eintrs, d.got);
	gc_assert_f(!w.progress_err, "write gave an impossible or failed report (%d, %s) at byte "
		    "%" PRIu64, w.progress_err, strerror(-w.progress_err), w.prog.done);
	gc_assert_eq_uint(w.eintr_no_hit, 0);
	gc_assert_eq_int(d.err, 0);
	gc_assert_f(d.bad_at < 0, "the reader saw a byte the writer did not write there: %s",
		    gc_mismatch_str(&d.mm, msg, sizeof(msg)));
	gc_assert_f(d.got == w.prog.done, "writer reported %" PRIu64 " bytes, reader got %" PRIu64,
		    w.prog.done, d.got);
	gc_assert_f(w.prog.partials > 0, "no partial write (0 < n < asked) in %u calls, "
		    "%u EINTR: the storm never caught a write half-way", w.prog.calls,
		    w.prog.eintrs);
}

/* --------------------------------------------------- nanosleep-remaining */

#define SLEEP_REQ_NS UINT64_C(30000000)  /* 30 ms */
#define SLEEP_STORM_NS UINT64_C(1000000) /* a signal every 1 ms */

struct sleep_run {
	unsigned calls, eintrs, eintr_no_hit;
	int bad_err;           /* an errno other than EINTR */
	/* the first violation, described */
	char bad[200];
	uint64_t total_ns;     /* first call to last return */
};

/* rem of one interrupted call of req, which really took elapsed: plausible? */
static void check_rem(struct sleep_run *r, uint64_t req, const struct timespec *rem,
		      uint64_t elapsed)
{
	uint64_t left = ts_ns(rem);

	if (r->bad[0])
		return;
	if (rem->tv_nsec < 0 || rem->tv_nsec >= (long)NS_PER_S || left == 0 || left > req)
		snprintf(r->bad, sizeof(r->bad), "call %u: rem %lld.%09ld s for req %" PRIu64
			 " ns: want 0 < rem <= req", r->calls, (long long)rem->tv_sec,
			 rem->tv_nsec, req);
	else if (req - left > elapsed)
		snprintf(r->bad, sizeof(r->bad), "call %u: the kernel claims %" PRIu64 " ns slept "
			 "(req - rem) but only %" PRIu64 " ns passed", r->calls, req - left,
			 elapsed);
}

/* Sleep SLEEP_REQ_NS in total, restarting each interrupted call with its rem. */
static void sleep_stormed(struct gc_storm *s, struct sleep_run *r)
{
	struct timespec req = { .tv_nsec = (long)SLEEP_REQ_NS }, rem;
	uint64_t start = gc_now_ns(), t0, t1;
	int ret, err;
	bool hit;

	do {
		t0 = gc_now_ns();
		gc_storm_enter(s);
		ret = nanosleep(&req, &rem);
		err = errno;
		hit = gc_storm_leave(s);
		if (ret == -1 && err == EINTR && !hit)
			r->eintr_no_hit++;
		t1 = gc_now_ns();
		r->calls++;
		if (ret == -1 && err != EINTR) {
			r->bad_err = err;
			break;
		}
		if (ret == -1) {
			r->eintrs++;
			check_rem(r, ts_ns(&req), &rem, t1 - t0);
			req = rem;
		}
	} while (ret == -1 && r->calls < 100000);
	r->total_ns = gc_now_ns() - start;
}

/*
 * The kernel computes rem against the timer's hard expiry, which includes the
 * thread's timer slack (50 us by default): rem could exceed req by up to the
 * slack for a call interrupted at once. The subtest sets the slack to 1 ns,
 * the smallest the kernel takes, so that rem <= req is exact.
 */
static void nanosleep_run(const char *what, bool sa_restart)
{
	static struct gc_storm s;
	struct sleep_run r = { 0 };
	int slack;

	gc_assert_ok(gc_storm_start(&s, &(struct gc_storm_cfg){ .interval_ns = SLEEP_STORM_NS,
								.sa_restart = sa_restart }));
	slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	gc_assert_syscall(slack);
	gc_assert_syscall(prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0));
	sleep_stormed(&s, &r);
	gc_assert_ok(gc_storm_stop(&s));
	gc_assert_syscall(prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0));

	storm_verdict(&s, what);
	gc_info("%u calls, %u EINTR, %" PRIu64 " ns in all for %" PRIu64 " ns asked", r.calls,
		r.eintrs, r.total_ns, SLEEP_REQ_NS);
	gc_assert_f(!r.bad_err, "nanosleep failed: %s", strerror(r.bad_err));
	gc_assert_eq_uint(r.eintr_no_hit, 0);
	gc_assert_f(r.eintrs > 0, "no nanosleep returned EINTR in %u calls", r.calls);
	gc_assert_f(!r.bad[0], "%s", r.bad);
	gc_assert_f(r.total_ns >= SLEEP_REQ_NS, "restarting with rem woke early: %" PRIu64
		    " ns passed for %" PRIu64 " ns asked", r.total_ns, SLEEP_REQ_NS);
}

static void test_nanosleep_remaining(void *fx)
{
	(void)fx;
	nanosleep_run("nanosleep-remaining", false);
}

/*
 * Contract: the same, with the storm's handler installed with SA_RESTART.
 * signal(7): "The following interfaces are never restarted after being
 * interrupted by a signal handler, regardless of the use of SA_RESTART; they
 * always fail with the error EINTR when interrupted by a signal handler: [...]
 * Sleep interfaces: clock_nanosleep(2), nanosleep(2), and usleep(3)." [src
 * mkerrisk/man-pages man7/signal.7 @ 091fbf1fef48] (man-pages 5.13). (The same
 * list names epoll_wait(2), poll(2), select(2), sigtimedwait(2)...) So
 * nanosleep still returns EINTR with rem, and restarting it with rem is the
 * caller's job in both modes: the host twin of a KFD wait that returns -EINTR
 * itself rather than -ERESTARTSYS (kfd_interrupt's -sa-restart subtests).
 */
static void test_nanosleep_sa_restart(void *fx)
{
	(void)fx;
	nanosleep_run("nanosleep-sa-restart", true);
}

/* ------------------------------------------------------------ futex-wait */

#define FUTEX_VAL 0x1234u
#define FUTEX_ROUNDS 3

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

struct futex_round {
	long ret, wake;
	int err;
	bool hit;
	uint32_t after;
};

static void futex_wait_stormed(struct gc_storm *s, uint32_t *word, struct futex_round *fr)
{
	gc_assert_ok(gc_storm_start(s, &(struct gc_storm_cfg){ .interval_ns = 1000000 }));
	gc_storm_enter(s);
	fr->ret = futex(word, FUTEX_WAIT_PRIVATE, FUTEX_VAL);
	fr->err = errno;
	fr->hit = gc_storm_leave(s);
	gc_assert_ok(gc_storm_stop(s));
	fr->after = *(volatile uint32_t *)word;
	fr->wake = futex(word, FUTEX_WAKE_PRIVATE, INT_MAX);
}

static void test_futex_wait(void *fx)
{
	static struct gc_storm s;
	static uint32_t word __attribute__((aligned(4)));
	struct futex_round fr;
	long r;
	int err;

	(void)fx;
	for (unsigned round = 0; round < FUTEX_ROUNDS; round++) {
		word = FUTEX_VAL;
		futex_wait_stormed(&s, &word, &fr);
		storm_verdict(&s, "futex-wait");
		gc_assert_f(fr.ret == -1 && fr.err == EINTR,
			    "round %u: FUTEX_WAIT with no waker returned %ld (errno %d), want "
			    "-1/EINTR", round, fr.ret, fr.err);
		gc_assert_f(fr.hit, "EINTR although no signal landed inside the wait");
		gc_assert_f(fr.after == FUTEX_VAL, "round %u: futex word 0x%x after the "
			    "interrupted wait, want 0x%x", round, fr.after, FUTEX_VAL);
		gc_assert_f(fr.wake == 0, "round %u: FUTEX_WAKE woke %ld: the interrupted waiter "
			    "is still queued", round, fr.wake);
	}
	r = futex(&word, FUTEX_WAIT_PRIVATE, FUTEX_VAL + 1);
	err = errno;
	gc_assert_f(r == -1 && err == EAGAIN, "FUTEX_WAIT on a mismatching value returned %ld "
		    "(errno %d), want -1/EAGAIN", r, err);
}

/* ---------------------------------------------------------- sigiter-read */

#define MSG_LEN 8
#define SIGITER_EINTRS_BEFORE_WRITE 3
#define HELPER_SAFETY_NS (1 * NS_PER_S)

static const uint8_t msg_bytes[MSG_LEN] = { 'g', 'p', 'u', 'c', 'f', 'r', 'm', '!' };

struct sigiter_read {
	int p[2];
	atomic_uint eintrs;  /* EINTR passes so far, for the helper */
	atomic_bool stop;
	atomic_bool helper_wrote;
	unsigned written;    /* messages written by this thread (resupplies) */
	unsigned got;        /* messages read whole and right */
	unsigned bad;        /* wrong returns: short, wrong bytes, other errno */
	unsigned eintr_no_hit;
	unsigned scribbled;  /* EINTR passes that wrote into the buffer */
	bool last_ok;        /* the final pass read the message */
	int bad_ret;
	int bad_err;
	int helper_err;
};

/*
 * Writes the message once, after the reader has been interrupted a few times
 * (the reads before see an empty pipe). HELPER_SAFETY_NS is no threshold: it
 * only unblocks a read that no signal will interrupt any more (the pass's
 * signal and its backstop both came before the call entered the kernel).
 */
static void *sigiter_helper(void *arg)
{
	struct sigiter_read *sr = arg;
	uint64_t since = gc_now_ns();
	unsigned seen = 0, now;

	while (!atomic_load(&sr->stop)) {
		now = atomic_load(&sr->eintrs);
		if (now != seen) {
			seen = now;
			since = gc_now_ns();
		}
		if (seen >= SIGITER_EINTRS_BEFORE_WRITE || gc_now_ns() - since > HELPER_SAFETY_NS) {
			if (write(sr->p[1], msg_bytes, MSG_LEN) == MSG_LEN)
				atomic_store(&sr->helper_wrote, true);
			else
				sr->helper_err = errno ? errno : EIO;
			return NULL;
		}
		sleep_ns(100000);
	}
	return NULL;
}

static void sigiter_pass_result(struct sigiter_read *sr, ssize_t n, int err, bool hit,
				const uint8_t *buf)
{
	sr->last_ok = false;
	if (n == -1 && err == EINTR) {
		sr->eintr_no_hit += !hit;
		sr->scribbled += !all_bytes(buf, GUARD + MSG_LEN + GUARD, CANARY);
		atomic_fetch_add(&sr->eintrs, 1);
	} else if (n == MSG_LEN && !memcmp(buf + GUARD, msg_bytes, MSG_LEN) &&
		   all_bytes(buf, GUARD, CANARY) &&
		   all_bytes(buf + GUARD + MSG_LEN, GUARD, CANARY)) {
		sr->got++;
		sr->last_ok = true;
	} else {
		if (!sr->bad++) {
			sr->bad_ret = (int)n;
			sr->bad_err = n < 0 ? err : 0;
		}
	}
}

/* One sigiter over reading the message; a pass that read it under a signal resupplies it. */
static int sigiter_read_loop(struct gc_sigiter *it, struct sigiter_read *sr)
{
	static const struct gc_sigiter_cfg cfg = { .max_passes = 40, .max_delay_ns = 100000000 };
	uint8_t buf[GUARD + MSG_LEN + GUARD];
	int r = gc_sigiter_begin(it, &cfg);

	while (!r && gc_sigiter_next(it)) {
		ssize_t n;
		int err;
		bool hit;

		memset(buf, CANARY, sizeof(buf));
		gc_sigiter_enter(it);
		n = read(sr->p[0], buf + GUARD, MSG_LEN);
		err = errno;
		hit = gc_sigiter_leave(it);
		sigiter_pass_result(sr, n, err, hit, buf);
		/* The iteration goes on after a read that was not a MISS: it needs the message. */
		if (sr->last_ok && it->last != GC_SIGITER_MISS &&
		    write(sr->p[1], msg_bytes, MSG_LEN) == MSG_LEN)
			sr->written++;
	}
	return r ? r : gc_sigiter_end(it);
}

static void check_sigiter_read(const struct gc_sigiter *it, const struct sigiter_read *sr,
			       int left)
{
	unsigned written = sr->written + atomic_load(&sr->helper_wrote);

	gc_storm_report(&it->storm, "sigiter-read");
	gc_info("passes %u: interrupted %u, early %u, completed %s; messages read %u of %u",
		it->passes, it->passes_interrupted, it->passes_early, it->completed ? "yes" : "no",
		sr->got, written);
	gc_storm_require_hits(&it->storm);
	gc_assert_eq_int(sr->helper_err, 0);
	gc_assert_f(!sr->bad, "%u passes returned neither EINTR nor the message; first: %d "
		    "(errno %d)", sr->bad, sr->bad_ret, sr->bad_err);
	gc_assert_eq_uint(sr->eintr_no_hit, 0);
	gc_assert_f(!sr->scribbled, "%u interrupted reads wrote into their buffer",
		    sr->scribbled);
	gc_assert_f(it->completed, "no uninterrupted pass in %u passes", it->passes);
	gc_assert(sr->last_ok);
	gc_assert_cmpuint(it->passes_interrupted, >, 0);
	gc_assert_cmpuint(atomic_load(&sr->eintrs), >, 0);
	gc_assert_f(sr->got == written && left == 0, "%u messages written, %u read whole, "
		    "%d bytes left in the pipe", written, sr->got, left);
}

static void test_sigiter_read(void *fx)
{
	static struct gc_sigiter it;
	struct sigiter_read sr = { 0 };
	pthread_t helper;
	int r, left;

	(void)fx;
	make_pipe(sr.p);
	gc_assert_eq_int(pthread_create(&helper, NULL, sigiter_helper, &sr), 0);
	r = sigiter_read_loop(&it, &sr);
	atomic_store(&sr.stop, true);
	gc_assert_eq_int(pthread_join(helper, NULL), 0);
	left = pipe_queued(sr.p[0]);
	close_pipe(sr.p);
	gc_assert_ok(r);
	check_sigiter_read(&it, &sr, left);
}

/* ------------------------------------------------------ storm-accounting */

#define ACCOUNT_SIGNALS 20
#define ACCOUNT_INTERVAL_NS 100000ull
#define ACCOUNT_GUARD_NS (10 * NS_PER_S)

/* Spin outside any bracket until `more` further signals arrived (or the hang guard). */
static uint64_t spin_for_signals(const struct gc_storm *s, uint64_t more)
{
	uint64_t want = gc_storm_counts(s).delivered + more, start = gc_now_ns();

	while (gc_storm_counts(s).delivered < want && gc_now_ns() - start < ACCOUNT_GUARD_NS)
		;
	return gc_storm_counts(s).delivered;
}

struct account {
	struct gc_storm_counts outside, bracketed, outside2, stopped, later;
	unsigned eintr, hits;
};

static void account_run(struct gc_storm *s, struct account *a)
{
	struct gc_storm_cfg cfg = { .interval_ns = ACCOUNT_INTERVAL_NS };
	uint8_t b;
	int p[2];

	gc_assert_ok(gc_storm_start(s, &cfg));
	make_pipe(p);
	spin_for_signals(s, ACCOUNT_SIGNALS);
	a->outside = gc_storm_counts(s);
	for (int i = 0; i < 3; i++) {
		ssize_t n;

		gc_storm_enter(s);
		n = read(p[0], &b, 1);
		a->eintr += n == -1 && errno == EINTR;
		a->hits += gc_storm_leave(s);
	}
	a->bracketed = gc_storm_counts(s);
	spin_for_signals(s, ACCOUNT_SIGNALS);
	a->outside2 = gc_storm_counts(s);
	gc_assert_ok(gc_storm_stop(s));
	a->stopped = gc_storm_counts(s);
	sleep_ns(5 * ACCOUNT_INTERVAL_NS);
	a->later = gc_storm_counts(s);
	close_pipe(p);
}

static void test_storm_accounting(void *fx)
{
	static struct gc_storm s;
	struct account a = { 0 };

	(void)fx;
	account_run(&s, &a);
	storm_verdict(&s, "storm-accounting");
	gc_assert_f(a.outside.delivered >= ACCOUNT_SIGNALS, "only %" PRIu64 " signals in %llu s",
		    a.outside.delivered, ACCOUNT_GUARD_NS / NS_PER_S);
	gc_assert_eq_uint(a.outside.landed_inside, 0);
	gc_assert_eq_uint(a.outside.calls, 0);
	gc_assert_eq_uint(a.eintr, 3);
	gc_assert_eq_uint(a.hits, 3);
	gc_assert_eq_uint(a.bracketed.calls, 3);
	gc_assert_eq_uint(a.bracketed.calls_hit, 3);
	gc_assert_cmpuint(a.bracketed.landed_inside, >=, 3);
	gc_assert_cmpuint(a.bracketed.landed_inside, <=,
			  a.bracketed.delivered - a.outside.delivered);
	/* Outside brackets again: more signals, none counted inside. */
	gc_assert_cmpuint(a.outside2.delivered, >=, a.bracketed.delivered + ACCOUNT_SIGNALS);
	gc_assert_eq_uint(a.outside2.landed_inside, a.bracketed.landed_inside);
	/* Stopped: counters readable and frozen. */
	gc_assert_eq_uint(a.later.delivered, a.stopped.delivered);
	gc_assert_eq_uint(a.stopped.calls, 3);
}

/* -------------------------------------------------------- syscall-latency */

#define LAT_BATCHES 200
#define LAT_BATCH 64

struct latency {
	double quiet[LAT_BATCHES], storm[LAT_BATCHES];
	unsigned wrong; /* getppid() answers that differ from the first */
};

/* Mean ns per getppid() over each batch; bracketed when s is not NULL. */
static void time_getppid(struct gc_storm *s, double *out, pid_t want, unsigned *wrong)
{
	for (unsigned b = 0; b < LAT_BATCHES; b++) {
		uint64_t t0 = gc_now_raw_ns();

		if (s)
			gc_storm_enter(s);
		for (unsigned i = 0; i < LAT_BATCH; i++)
			*wrong += getppid() != want;
		if (s)
			gc_storm_leave(s);
		out[b] = (double)(gc_now_raw_ns() - t0) / LAT_BATCH;
	}
}

static void test_syscall_latency(void *fx)
{
	static struct gc_storm s;
	static struct latency l;
	pid_t ppid = getppid();

	(void)fx;
	l.wrong = 0;
	time_getppid(NULL, l.quiet, ppid, &l.wrong);
	gc_assert_ok(gc_storm_start(&s, &(struct gc_storm_cfg){ .interval_ns = 50000 }));
	time_getppid(&s, l.storm, ppid, &l.wrong);
	gc_assert_ok(gc_storm_stop(&s));
	storm_verdict(&s, "syscall-latency");
	gc_assert_f(!l.wrong, "getppid() changed its answer %u times under the storm", l.wrong);
	gc_metric("getppid-quiet", "ns", GC_LOWER_IS_BETTER, l.quiet, LAT_BATCHES);
	gc_metric("getppid-storm", "ns", GC_LOWER_IS_BETTER, l.storm, LAT_BATCHES);
}

/* ------------------------------------------------------------------ main */

/* A subtest that failed with a storm running leaves it here: stop it. */
static void after_each(void *fx)
{
	(void)fx;
	gc_storm_stop_leftover();
}

static const struct gc_fixture fixture = { .after_each = after_each };

static const struct gc_subtest subtests[] = {
	{ "pipe-read-eintr", test_pipe_read_eintr,
	  "blocking read of an empty pipe: EINTR, buffer untouched, later bytes all readable" },
	{ "pipe-read-sa-restart", test_pipe_read_sa_restart,
	  "the same read with SA_RESTART: restarted through 10 signals, never EINTR, bytes whole" },
	{ "pipe-write-partial", test_pipe_write_partial,
	  "4 MiB through a slowly drained pipe: partial counts exact, resumed stream intact" },
	{ "nanosleep-remaining", test_nanosleep_remaining,
	  "EINTR with 0 < rem <= req, req - rem <= time passed, restarts never wake early" },
	{ "nanosleep-sa-restart", test_nanosleep_sa_restart,
	  "the same with SA_RESTART: signal(7) never restarts nanosleep, EINTR and rem as before" },
	{ "futex-wait", test_futex_wait,
	  "FUTEX_WAIT: EINTR, word unchanged, no waiter left queued; mismatch: EAGAIN" },
	{ "sigiter-read", test_sigiter_read,
	  "sigiter over a pipe read: EINTR with nothing consumed until a pass completes" },
	{ "storm-accounting", test_storm_accounting,
	  "signals outside brackets are not counted inside; bracketed blocking calls are" },
	{ "syscall-latency", test_syscall_latency,
	  "getppid() latency with and without a storm (metrics, no threshold)" },
	{ 0 }
};

GC_MAIN(.name = "host_interrupt", .description = "the interrupt contract on plain syscalls",
	.subtests = subtests, .fixture = &fixture, .placement = GC_PLACE_HOST)
