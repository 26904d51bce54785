// SPDX-License-Identifier: MIT
/*
 * The session harness (smi_session.h): fixture, reference session, helpers,
 * and the single-threaded subtests refcount, handles-across-cycles and
 * cost. The threaded ones are in smi_threads.c, exclusive-node in
 * smi_node.c. NOT RUN ON AMD HARDWARE.
 */
#include "smi_session.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "devfd.h"
#include "gc_amdgpu.h"
#include "measure.h"
#include "contract/session.h"

#define CHILD_TIMEOUT_MS 20000

static const char *const node_prefixes[] = { "/dev/kfd", "/dev/dri/", "/dev/gim-smi" };
#define N_PREFIXES (sizeof(node_prefixes) / sizeof(node_prefixes[0]))

const char *ss_rs(const struct ss_fx *f, ss_status r, char *buf, size_t len)
{
	return f->lib.ops->strerror(f->lib.ctx, r, buf, len);
}

int ss_devfds(void)
{
	int n = 0;

	for (size_t i = 0; i < N_PREFIXES; i++) {
		int r = gc_devfd_count(node_prefixes[i]);

		gc_assert_f(r >= 0, "/proc/self/fd: %s", strerror(-r));
		n += r;
	}
	return n;
}

void ss_devfds_list(char *buf, size_t len)
{
	char part[256];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < N_PREFIXES; i++) {
		int n;

		if (gc_devfd_list(node_prefixes[i], part, sizeof(part)) <= 0)
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", part);
		if (n < 0 || (size_t)n >= len - used)
			break; /* truncated */
		used += (size_t)n;
	}
}

const char *ss_fate(const struct gc_child_status *cs, unsigned timeout_ms, char *buf, size_t len)
{
	if (cs->fate == GC_CHILD_EXITED)
		snprintf(buf, len, "exited with status %d", cs->code);
	else if (cs->fate == GC_CHILD_SIGNALED)
		snprintf(buf, len, "killed by signal %d (%s)", cs->code, strsignal(cs->code));
	else
		snprintf(buf, len, "still running after %u s (killed)", timeout_ms / 1000);
	return buf;
}

/* ------------------------------------------------------------ fixture */

/* The library answered, but there is no device to test: fail, skip, or leave exclusive-node. */
static void no_device(struct ss_fx *f, int cards, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void no_device(struct ss_fx *f, int cards, const char *fmt, ...)
{
	GC_VFORMAT(f->why, sizeof(f->why), fmt);
	if (cards > 0)
		gc_fail("%s", f->why);
	if (access(SS_GIM_NODE, F_OK) != 0)
		gc_skip("%s; no " SS_GIM_NODE, f->why);
	gc_info("only exclusive-node can run: %s", f->why);
}

static int ses_init(void *ctx)
{
	const struct ss_fx *f = ctx;

	return (int)f->lib.ops->init(f->lib.ctx);
}

static int ses_shutdown(void *ctx)
{
	const struct ss_fx *f = ctx;

	return (int)f->lib.ops->shutdown(f->lib.ctx);
}

static const char *ses_status(void *ctx, int r, char *buf, size_t len)
{
	return ss_rs(ctx, (ss_status)r, buf, len);
}

/*
 * amdsmi reads its version, and so lib.refcounted, in the setup's session.
 * A shutdown's message names the step, its status asserted where the
 * library promises the count, else recorded.
 */
struct gc_session ss_session(struct ss_fx *f)
{
	return (struct gc_session){ .init_name = f->lib.init_call,
				    .shutdown_name = f->lib.shutdown_call, .init = ses_init,
				    .shutdown = ses_shutdown, .strerror = ses_status,
				    .status_len = 192, .checked = f->lib.refcounted,
				    .drift = GC_SESSION_SHUT_WHEN, .ctx = f };
}

/* Shut a session down: the status asserted where the library promises the count, else recorded. */
void ss_shut(struct ss_fx *f, const char *when)
{
	const struct gc_session s = ss_session(f);

	gc_session_close(&s, when);
}

static void ref_take(struct ss_fx *f, unsigned i)
{
	const struct ss_lib *l = &f->lib;
	struct ss_dev *d = &f->dev[i];
	uintptr_t h;
	char b[192];

	ss_ok(f, l->handle_call, l->ops->handle(l->ctx, i, &h));
	ss_ok(f, l->id_call, l->ops->id_of(l->ctx, h, d->id, sizeof(d->id)));
	l->ops->query(l->ctx, h, &d->a);
	gc_assert_f(d->a.st[SS_Q_BUS] == SS_SUCCESS, "device %u: %s: %s", i,
		    l->query_call[SS_Q_BUS], ss_rs(f, d->a.st[SS_Q_BUS], b, sizeof(b)));
	gc_info("device %u: %s, %s at %s, %llu bytes of VRAM", i, d->id,
		d->a.st[SS_Q_NAME] == SS_SUCCESS ? d->a.name : "(no name)", d->a.bus,
		(unsigned long long)d->a.mem_total);
}

/* In the setup's open session: every device as a persistent session sees it, then shutdown. */
static void reference(struct ss_fx *f, unsigned n)
{
	char fds[512];

	f->seen = n;
	f->n = n > SS_MAX_DEV ? SS_MAX_DEV : n;
	for (unsigned i = 0; i < f->n; i++)
		ref_take(f, i);
	ss_devfds_list(fds, sizeof(fds));
	gc_info("%s reference session: %u devices, device nodes open: %s", f->lib.name, n,
		fds[0] ? fds : "none");
	ss_shut(f, "reference session");
	gc_assert_f(ss_devfds() == f->fds0, "%d device node fds open after the reference "
		    "session's shutdown, %d before it", ss_devfds(), f->fds0);
}

void ss_setup(struct ss_fx *f)
{
	const struct ss_lib *l = &f->lib;
	char clause[320], b[192], why[512];
	unsigned n = 0;
	ss_status r;
	int cards;

	f->fds0 = ss_devfds();
	gc_amdgpu_clause(GC_AMDGPU_DRM_DIR, &cards, clause, sizeof(clause));
	r = l->ops->init(l->ctx);
	if (r != SS_SUCCESS) {
		no_device(f, cards, "%s: %s; %s", l->init_call, ss_rs(f, r, b, sizeof(b)), clause);
		return;
	}
	if (l->ops->usable && l->ops->usable(l->ctx, why, sizeof(why)) != 0) {
		l->ops->shutdown(l->ctx);
		gc_skip("%s", why);
	}
	r = l->ops->count(l->ctx, &n);
	if (r != SS_SUCCESS || n == 0) {
		l->ops->shutdown(l->ctx);
		no_device(f, cards, "%s: %s, %u devices; %s", l->count_call,
			  ss_rs(f, r, b, sizeof(b)), n, clause);
		return;
	}
	reference(f, n);
}

void ss_before_each(void *data)
{
	const struct ss_fx *f = data;

	gc_info("%s: %s", f->lib.refcounted ? "counted, asserted" : "no count promised, recorded",
		f->lib.count_why);
	gc_require_f(f->stuck == 0, "%u threads of an earlier subtest never returned (%s "
		     "deadlocked, or they could not all be started)", f->stuck, f->lib.name);
}

void ss_after_each(void *data)
{
	const struct ss_fx *f = data;
	char fds[512];
	int n = ss_devfds();

	ss_devfds_list(fds, sizeof(fds));
	gc_assert_f(n == f->fds0, "%d device node fds open after the subtest (%s), %d before "
		    "the first session", n, fds, f->fds0);
}

bool ss_may_release(const struct ss_fx *f)
{
	return f->stuck == 0;
}

/* ------------------------------------------------------------ helpers */

void ss_need_devices(const struct ss_fx *f)
{
	gc_require_f(f->why[0] == '\0', "%s", f->why);
}

/* Ids a request finds a device by must tell the devices apart. */
void ss_need_ids(const struct ss_fx *f)
{
	ss_need_devices(f);
	for (unsigned i = 0; i < f->n; i++)
		for (unsigned j = i + 1; j < f->n; j++)
			gc_assert_f(strcmp(f->dev[i].id, f->dev[j].id) != 0, "devices %u and %u "
				    "share the id %s: a request cannot find either by it", i, j,
				    f->dev[i].id);
}

void ss_unknown_id(const struct ss_fx *f, char *id, size_t len)
{
	const char *from = strchr(f->dev[0].id, ':');
	size_t start = from ? (size_t)(from - f->dev[0].id) + 1 : 0;

	snprintf(id, len, "%s", f->dev[0].id);
	for (char *p = id + start; *p; p++) {
		int v, c;

		if (!isxdigit((unsigned char)*p))
			continue;
		v = isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10;
		c = "0123456789abcdef"[15 - v];
		*p = (char)(isupper((unsigned char)*p) ? toupper(c) : c);
	}
	for (unsigned i = 0; i < f->n; i++)
		gc_require_f(strcasecmp(id, f->dev[i].id) != 0, "the id made to name no device, "
			     "%s, is device %u's", id, i);
}

int ss_diff(const struct ss_answer *ref, const struct ss_answer *a, bool *wrong)
{
	for (int q = 0; q < SS_NQ; q++) {
		*wrong = false;
		if (a->st[q] != ref->st[q])
			return q;
		if (a->st[q] != SS_SUCCESS)
			continue;
		*wrong = (q == SS_Q_NAME && strcmp(a->name, ref->name)) ||
			 (q == SS_Q_SERIAL && strcmp(a->serial, ref->serial)) ||
			 (q == SS_Q_BUS && strcmp(a->bus, ref->bus)) ||
			 (q == SS_Q_MEM && a->mem_total != ref->mem_total);
		if (*wrong)
			return q;
	}
	return -1;
}

void ss_diff_text(const struct ss_fx *f, const struct ss_dev *d, const struct ss_answer *a, int q,
		  char *buf, size_t len)
{
	char x[192], y[192];

	if (a->st[q] != d->a.st[q])
		snprintf(buf, len, "%s: %s, the reference session %s", f->lib.query_call[q],
			 ss_rs(f, a->st[q], x, sizeof(x)), ss_rs(f, d->a.st[q], y, sizeof(y)));
	else if (q == SS_Q_MEM)
		snprintf(buf, len, "%s: %llu, the reference session %llu", f->lib.query_call[q],
			 (unsigned long long)a->mem_total, (unsigned long long)d->a.mem_total);
	else
		snprintf(buf, len, "%s: \"%s\", the reference session \"%s\"", f->lib.query_call[q],
			 q == SS_Q_NAME ? a->name : q == SS_Q_SERIAL ? a->serial : a->bus,
			 q == SS_Q_NAME ? d->a.name : q == SS_Q_SERIAL ? d->a.serial : d->a.bus);
}

/* A session is open: the library sees the devices the reference session saw. */
void ss_expect_count(struct ss_fx *f, const char *when)
{
	unsigned n = 0;
	char b[192];
	ss_status r = f->lib.ops->count(f->lib.ctx, &n);

	gc_assert_f(r == SS_SUCCESS && n == f->seen, "%s: %s: %s, %u devices; the reference "
		    "session saw %u", when, f->lib.count_call, ss_rs(f, r, b, sizeof(b)), n, f->seen);
}

void ss_record_count(struct ss_fx *f, const char *when)
{
	unsigned n = 0;
	char b[192], fds[512];
	ss_status r = f->lib.ops->count(f->lib.ctx, &n);

	ss_devfds_list(fds, sizeof(fds));
	gc_info("%s: %s: %s, %u devices; device nodes open: %s", when, f->lib.count_call,
		ss_rs(f, r, b, sizeof(b)), n, fds[0] ? fds : "none");
}

static void extra_child(void *arg)
{
	struct ss_fx *f = arg;
	char b[192];

	gc_info("in a child, one %s more than there were inits: %s", f->lib.shutdown_call,
		ss_rs(f, f->lib.ops->shutdown(f->lib.ctx), b, sizeof(b)));
}

/*
 * Neither rocm_smi.h nor amdsmi.h says what a shutdown without a matching
 * init returns, or what it does to the count: it runs in a child, so that
 * whatever it does stays there, and is recorded. A hang is a failure.
 */
void ss_extra_shutdown(struct ss_fx *f, const char *after)
{
	struct gc_child_status cs;
	char b[96];

	gc_assert_ok(gc_fork_run(extra_child, f, CHILD_TIMEOUT_MS, &cs));
	gc_info("%s: the child %s", after, ss_fate(&cs, CHILD_TIMEOUT_MS, b, sizeof(b)));
	gc_assert_f(cs.fate != GC_CHILD_TIMED_OUT, "%s: one %s too many hung", after,
		    f->lib.shutdown_call);
}

/* ------------------------------------------------------------ refcount */

/*
 * refcount: k inits, then k shutdowns. Asserted: every init succeeds
 * (rsmi_init: "::RSMI_STATUS_SUCCESS is returned upon successful call." [src
 * ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h @ rocm-5.2.3]; amdsmi_init:
 * AMDSMI_STATUS_SUCCESS on success, its `@return` line), the session then sees
 * the devices, and the device nodes are back once the k-th shutdown
 * returned. Where the library promises the count (lib.refcounted: amdsmi.h,
 * "Singleton Design, requires the same number of inits as shutdowns." [src
 * ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @ a881068735de];
 * rocm_smi, by its source, rsmi_session.c) every shutdown succeeds and the
 * session still answers after each of the first k - 1; where it does not,
 * those are recorded. What follows the last shutdown is recorded.
 */
GC_SESSION_REFCOUNT_CASES(refcount_ks, refcount_one);

/* After the k inits: the session sees the devices; what it holds, recorded. */
static void refcount_opened(void *ctx, unsigned k)
{
	struct ss_fx *f = ctx;
	char when[96];

	ss_expect_count(f, "after the inits");
	snprintf(when, sizeof(when), "after %u inits", k);
	ss_record_count(f, when);
}

/* After shutdown i of k: before the k-th, the session answers where the count is promised. */
static void refcount_shut(void *ctx, unsigned i, unsigned k, const char *when)
{
	struct ss_fx *f = ctx;

	if (i < k && f->lib.refcounted)
		ss_expect_count(f, when);
	ss_record_count(f, when);
}

/* After the k-th: the nodes back; one shutdown more, recorded in a child. */
static void refcount_closed(void *ctx, unsigned k)
{
	struct ss_fx *f = ctx;

	gc_assert_f(ss_devfds() == f->fds0, "%d device node fds open after %u inits and as many "
		    "shutdowns, %d before", ss_devfds(), k, f->fds0);
	ss_extra_shutdown(f, "after the last shutdown");
}

static void refcount_one(void *ctx, const unsigned *kp)
{
	const struct gc_session s = ss_session(ctx);

	gc_session_refcount(&s, &(struct gc_session_refcount){
		.opened = refcount_opened, .shut = refcount_shut, .closed = refcount_closed,
		.ctx = ctx }, *kp);
}

void ss_test_refcount(void *data)
{
	ss_need_devices(data);
	gc_variants(refcount_ks, data);
}

/* ------------------------------------------------------------ handles */

struct stale {
	struct ss_fx *f;
	uintptr_t h;
};

/* In a child: what a handle of an ended session names. Exit 0 its device, 1 an error, 2 another. */
static void stale_use(void *arg)
{
	struct stale *st = arg;
	struct ss_fx *f = st->f;
	char id[SS_ID_LEN] = "", b[192];
	ss_status r = f->lib.ops->id_of(f->lib.ctx, st->h, id, sizeof(id));

	gc_info("the handle of an ended session: %s: %s%s%s", f->lib.id_call,
		ss_rs(f, r, b, sizeof(b)), r == SS_SUCCESS ? ", " : "", r == SS_SUCCESS ? id : "");
	fflush(stdout);
	_exit(r != SS_SUCCESS ? 1 : strcmp(id, f->dev[0].id) == 0 ? 0 : 2);
}

/* The first session's handle: device 0's, found by its id. */
static void handle_take(void *ctx)
{
	struct stale *st = ctx;
	const struct ss_fx *f = st->f;
	const struct ss_lib *l = &f->lib;

	ss_ok(f, l->resolve_call, l->ops->resolve(l->ctx, f->dev[0].id, &st->h));
}

/* In the next session, the stale handle used in a child: a hang or another device fails. */
static void handle_stale(void *ctx)
{
	struct stale st = *(struct stale *)ctx;
	struct gc_child_status cs;
	char b[96];

	gc_assert_ok(gc_fork_run(stale_use, &st, CHILD_TIMEOUT_MS, &cs));
	gc_info("the child using it %s", ss_fate(&cs, CHILD_TIMEOUT_MS, b, sizeof(b)));
	gc_assert_f(cs.fate != GC_CHILD_TIMED_OUT, "a handle of an ended session hung");
	gc_assert_f(cs.fate != GC_CHILD_EXITED || cs.code != 2,
		    "a handle of an ended session named another device");
}

/* The device found again by its id: the reference session's PCI bus id and serial. */
static void handle_again(void *ctx)
{
	struct ss_fx *f = ((struct stale *)ctx)->f;
	const struct ss_lib *l = &f->lib;
	const struct ss_dev *d = &f->dev[0];
	struct ss_answer a;
	uintptr_t h;

	ss_ok(f, l->resolve_call, l->ops->resolve(l->ctx, d->id, &h));
	l->ops->query(l->ctx, h, &a);
	gc_assert_eq_int(a.st[SS_Q_BUS], SS_SUCCESS);
	gc_assert_eq_str(a.bus, d->a.bus);
	gc_assert_eq_int(a.st[SS_Q_SERIAL], d->a.st[SS_Q_SERIAL]);
	if (a.st[SS_Q_SERIAL] == SS_SUCCESS)
		gc_assert_eq_str(a.serial, d->a.serial);
}

/*
 * handles-across-cycles: a handle (amdsmi) or index (rocm_smi) taken in one
 * session, used after a full shutdown and a new init, in a forked child
 * because a dangling handle may fault. Neither library documents what it
 * does, so an error or a crash is recorded; a hang fails, and so does an
 * answer naming another device (rocm_smi_lib's README warns only: "It is
 * important to note that a device may end up with a different index after a
 * reboot, so an index should not be relied upon to be constant over
 * reboots." [src ROCm/rocm_smi_lib README.md @ rocm-5.2.3]). The device
 * found again by its id (amdsmi: amdsmi_get_processor_handle_from_uuid, which
 * returns the processor handle from the given UUID; rocm_smi: the index whose
 * rsmi_dev_unique_id_get answer is the id) has the same PCI bus id and
 * serial.
 */
void ss_test_handles(void *data)
{
	struct ss_fx *f = data;
	const struct gc_session s = ss_session(f);
	struct stale st = { .f = f };

	ss_need_ids(f);
	gc_session_handles(&s, &(struct gc_session_handles){
		.take = handle_take, .stale = handle_stale, .again = handle_again,
		.closing = "the session the handle came from",
		.closing_again = "the session that found the device again", .ctx = &st });
}

/* ------------------------------------------------------------ cost */

#define COST_REPS GC_SESSION_COST_REPS

static double ns_since(uint64_t t0)
{
	return (double)(gc_now_ns() - t0);
}

/* One request's work: find device 0 by its id, ask it everything. The resolution's status. */
static ss_status request(struct ss_fx *f, double *ns)
{
	const struct ss_lib *l = &f->lib;
	struct ss_answer a;
	uint64_t t0 = gc_now_ns();
	uintptr_t h;
	ss_status r = l->ops->resolve(l->ctx, f->dev[0].id, &h);

	if (r == SS_SUCCESS)
		l->ops->query(l->ctx, h, &a);
	*ns = ns_since(t0);
	return r;
}

/* Per-request sessions from zero: init, request, shutdown, each timed. */
static void cost_cold(struct ss_fx *f, double *init, double *shutdown, double *lazy)
{
	const struct gc_session s = ss_session(f);
	double req;

	for (unsigned i = 0; i < COST_REPS; i++) {
		uint64_t t0 = gc_now_ns();

		gc_session_open(&s);
		init[i] = ns_since(t0);
		ss_ok(f, f->lib.resolve_call, request(f, &req));
		t0 = gc_now_ns();
		ss_shut(f, "a cold session");
		shutdown[i] = ns_since(t0);
		lazy[i] = init[i] + req + shutdown[i];
	}
}

/*
 * A warm request, inside the held session. Where the library promises no
 * count, an inner shutdown that ends the held session skips the warm
 * metrics, naming it.
 */
static void cost_request(void *ctx, double *ns)
{
	struct ss_fx *f = ctx;
	const struct ss_lib *l = &f->lib;
	char b[192];
	ss_status r = request(f, ns);

	if (r != SS_SUCCESS && !l->refcounted) {
		l->ops->shutdown(l->ctx);
		gc_skip("an init and shutdown inside a held session ended it: %s: %s (%s)",
			l->resolve_call, ss_rs(f, r, b, sizeof(b)), l->count_why);
	}
	ss_ok(f, l->resolve_call, r);
}

/* Inside a held session: init and shutdown (warm), then a request. */
static void cost_warm(struct ss_fx *f, double *warm, double *query)
{
	const struct gc_session s = ss_session(f);

	gc_session_cost_warm(&s, cost_request, warm, query, COST_REPS);
}

/*
 * cost: init and shutdown from zero (what a per-request daemon pays), a
 * request's work, init and shutdown while another session holds the count
 * (warm), and the per-request session (init + request + shutdown) over a
 * persistent session's request, as a ratio. Metrics, no thresholds.
 */
void ss_test_cost(void *data)
{
	struct ss_fx *f = data;
	double cold_init[COST_REPS], cold_shut[COST_REPS], lazy[COST_REPS];
	double warm[COST_REPS], query[COST_REPS];

	ss_need_ids(f);
	cost_cold(f, cold_init, cold_shut, lazy);
	gc_metric("init-cold", "ns", GC_LOWER_IS_BETTER, cold_init, COST_REPS);
	gc_metric("shutdown-cold", "ns", GC_LOWER_IS_BETTER, cold_shut, COST_REPS);
	gc_metric("request-lazy", "ns", GC_LOWER_IS_BETTER, lazy, COST_REPS);
	cost_warm(f, warm, query);
	gc_metric("init-shutdown-warm", "ns", GC_LOWER_IS_BETTER, warm, COST_REPS);
	gc_metric("query", "ns", GC_LOWER_IS_BETTER, query, COST_REPS);
	gc_session_cost_ratio(lazy, query, COST_REPS);
	gc_assert_cmpint(ss_devfds(), ==, f->fds0);
}
