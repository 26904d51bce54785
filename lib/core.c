// SPDX-License-Identifier: MIT
/*
 * The test framework: command line, subtest loop, results, crash reporting.
 * All mutable state lives in the one struct below, owned by the framework.
 */
#include "core.h"
#include "core_private.h"
#include "measure.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum gc_result { GC_SUCCESS, GC_SKIP, GC_FAIL };

#define GC_KEPT_CHECKS 32 /* failed checks listed one a line; more are counted */

struct gc_deferred {
	void (*fn)(void *arg);
	void *arg;
};

static const char *const result_names[] = { "SUCCESS", "SKIP", "FAIL" };

struct gc_filter {
	char *sub;  /* glob on the subtest name */
	char *dyn;  /* glob on dynamic subtest names, NULL: all */
};

struct gc_state {
	const struct gc_test *test;
	const char *name;
	/* selection */
	struct gc_filter *filters;
	size_t n_filters;
	const char *dyn_glob;
	/* fixture */
	bool fixture_ran;
	enum gc_result fixture_result;
	char fixture_reason[512];
	void *fixture_data;
	/* running subtest / dynamic subtest */
	const char *subtest;
	bool subtest_soaks;
	uint64_t subtest_start;
	char dynamic[256];
	bool in_dynamic;
	uint64_t dynamic_start;
	int dyn_counts[3];
	bool dyn_seen; /* gc_dynamic() was called, even if its name was filtered out */
	enum gc_result jump_result;
	int jump_target; /* enum jump_target */
	sigjmp_buf subtest_jmp;
	sigjmp_buf dynamic_jmp;
	sigjmp_buf fixture_jmp;
	/* failed non-fatal checks: [0, n_checks) recorded; a dynamic owns [dyn_mark, ...) */
	pthread_mutex_t check_lock;
	unsigned n_checks;
	unsigned dyn_mark;
	char checks[GC_KEPT_CHECKS][320];
	/*
	 * Deferred cleanups, one stack: the fixture's [0, sub_defer_mark), the
	 * subtest's [sub_defer_mark, ...), a dynamic's [dyn_defer_mark, n_deferred).
	 */
	struct gc_deferred deferred[GC_DEFER_MAX];
	unsigned n_deferred;
	unsigned sub_defer_mark;
	unsigned dyn_defer_mark;
	bool in_cleanup;
	/* totals */
	int counts[3];
	bool in_child;
	pid_t main_tid; /* the thread whose stack the jump buffers belong to */
};

enum jump_target { JUMP_NONE, JUMP_FIXTURE, JUMP_SUBTEST, JUMP_DYNAMIC };

static struct gc_state gc = { .check_lock = PTHREAD_MUTEX_INITIALIZER };

/* ---------------------------------------------------------------- output */

void gc_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (fmt[0] && fmt[strlen(fmt) - 1] != '\n')
		putchar('\n');
	fflush(stdout);
}

void gc_warn(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("WARNING: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (fmt[0] && fmt[strlen(fmt) - 1] != '\n')
		fputc('\n', stderr);
	fflush(stderr);
}

static double seconds_since(uint64_t start_ns)
{
	return (double)(gc_now_ns() - start_ns) / 1e9;
}

const char *gc_current_subtest(void)
{
	return gc.subtest;
}

/* subtest is named in the test's .soaks. */
static bool in_soaks(const char *subtest)
{
	for (const char *const *s = gc.test->soaks; s && *s; s++)
		if (!strcmp(*s, subtest))
			return true;
	return false;
}

static const char *const placement_names[] = {
	[GC_PLACE_NODE] = "node", [GC_PLACE_GPU] = "gpu", [GC_PLACE_GPU_ALONE] = "gpu-alone",
	[GC_PLACE_HOST] = "host",
};

/* Where subtest runs: its rule in .placements, else the binary's .placement. */
static enum gc_placement placement_of(const char *subtest)
{
	for (const struct gc_placement_rule *r = gc.test->placements; r && r->subtest; r++)
		if (!strcmp(r->subtest, subtest))
			return r->where;
	return gc.test->placement;
}

/* The i-th entry of $GPUCONFORM_DEVICES when it is a node index, else -1. */
static long node_index(int i)
{
	const char *p = getenv(GC_DEVICES_ENV);
	char *end;
	long v;

	for (; p && *p && i > 0; i--) {
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	if (!p || i < 0 || *p < '0' || *p > '9')
		return -1;
	v = strtol(p, &end, 10);
	return *end == ',' || *end == '\0' ? v : -1;
}

unsigned long gc_node_share(unsigned long total)
{
	const char *env = getenv(GC_COPIES_ENV);
	char *end;
	unsigned long copies = env && *env ? strtoul(env, &end, 10) : 1;

	if (!env || !*env || *end || copies == 0)
		copies = 1;
	return (total + copies - 1) / copies;
}

long gc_device_index(int ordinal)
{
	long n = node_index(ordinal);

	return n >= 0 ? n : (long)ordinal;
}

const char *gc_device_name(int ordinal, char *buf, size_t len)
{
	snprintf(buf, len, "gpu%ld", gc_device_index(ordinal));
	return buf;
}

bool gc_current_soaks(void)
{
	return gc.subtest && gc.subtest_soaks;
}

const char *gc_current_dynamic(void)
{
	return gc.in_dynamic ? gc.dynamic : NULL;
}

bool gc_in_child(void)
{
	return gc.in_child;
}

const char *gc__test_name(void)
{
	return gc.name;
}

/* --------------------------------------------------- leaving a test body */

static enum jump_target current_target(void)
{
	if (gc.in_dynamic)
		return JUMP_DYNAMIC;
	if (gc.subtest)
		return gc.jump_target == JUMP_FIXTURE ? JUMP_FIXTURE : JUMP_SUBTEST;
	return (enum jump_target)gc.jump_target;
}

static void print_skip_reason(const char *reason)
{
	/* A fixture's reason is printed by every subtest it skips. */
	if (current_target() == JUMP_FIXTURE) {
		snprintf(gc.fixture_reason, sizeof(gc.fixture_reason), "%s", reason);
		return;
	}
	printf("Skip reason: %s\n", reason);
	fflush(stdout);
}

static enum gc_result worse(enum gc_result a, enum gc_result b)
{
	return a > b ? a : b;
}

unsigned gc_checks_failed(void)
{
	unsigned n;

	pthread_mutex_lock(&gc.check_lock);
	n = gc.n_checks - (gc.in_dynamic ? gc.dyn_mark : 0);
	pthread_mutex_unlock(&gc.check_lock);
	return n;
}

/*
 * The end of a scope whose checks began at mark (a failed check fails it, as core.h says),
 * with the count and one line per check on stderr. Forgets them.
 */
static enum gc_result checks_verdict(unsigned mark, const char *scope)
{
	unsigned n, i;

	pthread_mutex_lock(&gc.check_lock);
	n = gc.n_checks > mark ? gc.n_checks - mark : 0;
	if (n) {
		fflush(stdout);
		fprintf(stderr, "FAIL: %u failed check%s in %s:\n", n, n == 1 ? "" : "s", scope);
		for (i = mark; i < gc.n_checks && i < GC_KEPT_CHECKS; i++)
			fprintf(stderr, "  %s\n", gc.checks[i]);
		if (i - mark < n)
			fprintf(stderr, "  (%u more, each printed above)\n", n - (i - mark));
		fflush(stderr);
	}
	gc.n_checks = mark < gc.n_checks ? mark : gc.n_checks;
	pthread_mutex_unlock(&gc.check_lock);
	return n ? GC_FAIL : GC_SUCCESS;
}

/*
 * A failure in a helper thread cannot jump to the main thread's stack: end
 * the (dynamic) subtest with its result line and the process with its status.
 */
static void __attribute__((noreturn)) leave_from_thread(enum gc_result r)
{
	const char *what = gc.in_dynamic ? "Dynamic subtest" : "Subtest";
	const char *name = gc.in_dynamic ? gc.dynamic : gc.subtest;
	uint64_t start = gc.in_dynamic ? gc.dynamic_start : gc.subtest_start;

	fprintf(stderr, "(the %s above happened in a helper thread: ending the process)\n",
		r == GC_SKIP ? "skip" : "failure");
	r = worse(r, checks_verdict(0, name ? name : gc.name));
	if (name)
		printf("%s %s: %s (%.3fs)\n", what, name, result_names[r], seconds_since(start));
	if (gc.in_dynamic && gc.subtest)
		printf("Subtest %s: %s (%.3fs)\n", gc.subtest, result_names[r],
		       seconds_since(gc.subtest_start));
	fflush(stdout);
	fflush(stderr);
	_exit(r == GC_SKIP ? GC_EXIT_SKIP : GC_EXIT_FAILURE);
}

static void __attribute__((noreturn)) leave(enum gc_result r)
{
	fflush(stdout);
	fflush(stderr);
	if (gc.in_child)
		r = worse(r, checks_verdict(0, "the forked child"));
	if (gc.in_child)
		_exit(r == GC_SKIP ? GC_EXIT_SKIP : GC_EXIT_FAILURE);
	if (gettid() != gc.main_tid)
		leave_from_thread(r);
	gc.jump_result = r;
	switch (current_target()) {
	case JUMP_DYNAMIC:
		siglongjmp(gc.dynamic_jmp, 1);
	case JUMP_SUBTEST:
		siglongjmp(gc.subtest_jmp, 1);
	case JUMP_FIXTURE:
		siglongjmp(gc.fixture_jmp, 1);
	case JUMP_NONE:
		break;
	}
	r = worse(r, checks_verdict(0, gc.name));
	exit(r == GC_SKIP ? GC_EXIT_SKIP : GC_EXIT_FAILURE);
}

static void print_location(const char *file, int line, const char *func)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: %s(): ", file, line, func);
}

void gc__skip(const char *file, int line, const char *func, const char *fmt, ...)
{
	char reason[512];

	GC_VFORMAT(reason, sizeof(reason), fmt);
	print_location(file, line, func);
	if (gc.in_cleanup) {
		fprintf(stderr, "FAIL: a deferred cleanup cannot skip (\"%s\")\n", reason);
		leave(GC_FAIL);
	}
	fprintf(stderr, "SKIP: %s\n", reason);
	print_skip_reason(reason);
	leave(GC_SKIP);
}

void gc__fail(const char *file, int line, const char *func, const char *fmt, ...)
{
	va_list ap;

	print_location(file, line, func);
	fputs("FAIL: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	leave(GC_FAIL);
}

void gc__abort(const char *file, int line, const char *func, const char *fmt, ...)
{
	va_list ap;

	print_location(file, line, func);
	fprintf(stderr, "Test abort in %s: ", gc.subtest ? gc.subtest : "fixture");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	checks_verdict(0, gc.subtest ? gc.subtest : "fixture");
	fflush(stderr);
	fflush(stdout);
	if (gc.in_child)
		_exit(GC_EXIT_ABORT);
	exit(GC_EXIT_ABORT);
}

/* ---------------------------------------------------- deferred cleanups */

/* Why the caller may not defer here, or NULL. */
static const char *defer_refusal(void)
{
	if (gc.in_child)
		return "in a gc_fork_run() child (the parent's scopes are not the child's): "
		       "release it in the child's body";
	if (gettid() != gc.main_tid)
		return "from a helper thread: defer from the thread that runs the subtest";
	if (current_target() == JUMP_NONE)
		return "outside a subtest, dynamic subtest or fixture";
	return NULL;
}

void gc__defer(const char *file, int line, const char *func, void (*fn)(void *arg), void *arg)
{
	const char *refusal = defer_refusal();

	if (refusal)
		gc__fail(file, line, func, "gc_defer() %s", refusal);
	if (gc.n_deferred == GC_DEFER_MAX)
		gc__fail(file, line, func, "gc_defer(): more than GC_DEFER_MAX (%d) cleanups "
			 "deferred at once", GC_DEFER_MAX);
	gc.deferred[gc.n_deferred++] = (struct gc_deferred){ fn, arg };
}

void *gc__defer_calloc(const char *file, int line, const char *func, size_t size,
		       void (*drop)(void *record))
{
	void *record = calloc(1, size);

	if (!record)
		gc__fail(file, line, func, "calloc(%zu): %s", size, strerror(errno));
	gc__defer(file, line, func, drop, record);
	return record;
}

/*
 * Runs the cleanups [mark, n_deferred) last first, each with jmp as the
 * scope's jump buffer: one that fails is counted and the rest still run.
 * The worst result among them.
 */
static enum gc_result run_deferred(unsigned mark, sigjmp_buf *jmp)
{
	volatile enum gc_result r = GC_SUCCESS;

	while (gc.n_deferred > mark) {
		struct gc_deferred d = gc.deferred[--gc.n_deferred];

		gc.in_cleanup = true;
		if (sigsetjmp(*jmp, 1) == 0)
			d.fn(d.arg);
		else
			r = worse(r, gc.jump_result);
		gc.in_cleanup = false;
	}
	return r;
}

/* ------------------------------------------------------ broken promises */

/* What a failed assert or check says: the expression, then lines `  ...\n`. */
struct gc_msg {
	char expr[512];
	char detail[1024];
};

static void __attribute__((format(printf, 2, 3))) msg_add(struct gc_msg *m, const char *fmt, ...)
{
	size_t used = strlen(m->detail);

	GC_VFORMAT(m->detail + used, sizeof(m->detail) - used, fmt);
}

static void print_msg(const char *what, const char *file, int line, const char *func,
		      const struct gc_msg *m)
{
	print_location(file, line, func);
	fprintf(stderr, "Failed %s: %s\n%s", what, m->expr, m->detail);
	fflush(stderr);
}

static void __attribute__((noreturn)) assert_broken(const char *file, int line, const char *func,
						    const struct gc_msg *m)
{
	print_msg("assertion", file, line, func, m);
	leave(GC_FAIL);
}

/* s appended to out[len], cut where it does not fit. */
static void append(char *out, size_t len, const char *str)
{
	size_t used = strlen(out), n = strlen(str);

	if (used + n >= len)
		n = len - used - 1;
	memcpy(out + used, str, n);
	out[used + n] = '\0';
}

/* One line for the end-of-subtest list: `file:line: func(): Failed check: EXPR; detail`. */
static void check_line(char *out, size_t len, const char *file, int line, const char *func,
		       const struct gc_msg *m)
{
	char detail[sizeof(m->detail)], *save = NULL;

	snprintf(out, len, "%s:%d: %s(): Failed check: ", file, line, func);
	append(out, len, m->expr);
	memcpy(detail, m->detail, sizeof(detail));
	for (char *l = strtok_r(detail, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		append(out, len, "; ");
		append(out, len, l + strspn(l, " "));
	}
}

static void check_broken(const char *file, int line, const char *func, const struct gc_msg *m)
{
	print_msg("check", file, line, func, m);
	pthread_mutex_lock(&gc.check_lock);
	if (gc.n_checks < GC_KEPT_CHECKS)
		check_line(gc.checks[gc.n_checks], sizeof(gc.checks[0]), file, line, func, m);
	gc.n_checks++;
	pthread_mutex_unlock(&gc.check_lock);
}

static void print_errno_hint(struct gc_msg *m, int saved)
{
	if (saved)
		msg_add(m, "  (last errno: %d, %s)\n", saved, strerror(saved));
}

static void expr_msg(struct gc_msg *m, const char *expr, int saved, const char *fmt, va_list ap)
{
	snprintf(m->expr, sizeof(m->expr), "%s", expr);
	m->detail[0] = '\0';
	if (fmt) {
		size_t used;

		msg_add(m, "  ");
		used = strlen(m->detail);
		vsnprintf(m->detail + used, sizeof(m->detail) - used, fmt, ap);
		msg_add(m, "\n");
	}
	print_errno_hint(m, saved);
}

/*
 * gc_assert_f / gc_check_f's two entry points, one message: broken is
 * assert_broken (never returns) or check_broken (recorded; errno given back
 * as it was found).
 */
#define EXPR_ENTRY(how, broken)                                                          \
	void gc__expr_##how(const char *file, int line, const char *func, const char *expr, \
			    const char *fmt, ...)                                         \
	{                                                                                \
		int saved = errno;                                                       \
		struct gc_msg m;                                                         \
		va_list ap;                                                              \
		va_start(ap, fmt);                                                       \
		expr_msg(&m, expr, saved, fmt, ap);                                      \
		va_end(ap);                                                              \
		broken(file, line, func, &m);                                            \
		errno = saved;                                                           \
	}
EXPR_ENTRY(assert, assert_broken)
EXPR_ENTRY(check, check_broken)
#undef EXPR_ENTRY

static void cmp_expr(struct gc_msg *m, const char *a, const char *op, const char *b)
{
	snprintf(m->expr, sizeof(m->expr), "%s %s %s", a, op, b);
	m->detail[0] = '\0';
}

static void cmp_msg_i(struct gc_msg *m, const char *a, const char *op, const char *b,
		      intmax_t va, intmax_t vb)
{
	cmp_expr(m, a, op, b);
	msg_add(m, "  %s = %jd\n  %s = %jd\n", a, va, b, vb);
}

static void cmp_msg_u(struct gc_msg *m, const char *a, const char *op, const char *b,
		      uintmax_t va, uintmax_t vb)
{
	cmp_expr(m, a, op, b);
	msg_add(m, "  %s = %ju (0x%jx)\n  %s = %ju (0x%jx)\n", a, va, va, b, vb, vb);
}

static void cmp_msg_d(struct gc_msg *m, const char *a, const char *op, const char *b,
		      double va, double vb)
{
	cmp_expr(m, a, op, b);
	msg_add(m, "  %s = %.17g\n  %s = %.17g\n", a, va, b, vb);
}

static void cmp_msg_s(struct gc_msg *m, const char *a, const char *b, const char *va,
		      const char *vb)
{
	cmp_expr(m, a, "==", b);
	msg_add(m, "  %s = \"%s\"\n  %s = \"%s\"\n", a, va ? va : "(null)", b,
		vb ? vb : "(null)");
}

bool gc__streq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static const char *errno_text(int e)
{
	return e ? strerror(e) : "success";
}

static void errno_msg(struct gc_msg *m, const char *expr, int want, int got)
{
	const char *name_want = want ? strerrorname_np(want) : "0";
	const char *name_got = got < 0 ? strerrorname_np(-got) : NULL;

	snprintf(m->expr, sizeof(m->expr), "%s == %s%s", expr, want ? "-" : "",
		 name_want ? name_want : "?");
	m->detail[0] = '\0';
	msg_add(m, "  expected %d (%s), got %d", -want, errno_text(want), got);
	if (got < 0)
		msg_add(m, " (%s, %s)", name_got ? name_got : "?", strerror(-got));
	msg_add(m, "\n");
}

/*
 * A predicate's two entry points, one message: gc__PRED_assert prints it and
 * leaves (never returns), gc__PRED_check prints it, records it and returns.
 * params is the parenthesised parameter list; msg fills struct gc_msg m from it.
 */
#define ENTRIES(pred, params, msg)                   \
	void gc__##pred##_assert params               \
	{                                             \
		struct gc_msg m;                      \
		msg;                                  \
		assert_broken(file, line, func, &m);  \
	}                                             \
	void gc__##pred##_check params                \
	{                                             \
		struct gc_msg m;                      \
		msg;                                  \
		check_broken(file, line, func, &m);   \
	}
#define CMP_PARAMS(type)                                                                  \
	(const char *file, int line, const char *func, const char *a, const char *op,      \
	 const char *b, type va, type vb)
ENTRIES(cmp_i, CMP_PARAMS(intmax_t), cmp_msg_i(&m, a, op, b, va, vb))
ENTRIES(cmp_u, CMP_PARAMS(uintmax_t), cmp_msg_u(&m, a, op, b, va, vb))
ENTRIES(cmp_d, CMP_PARAMS(double), cmp_msg_d(&m, a, op, b, va, vb))
ENTRIES(cmp_s, (const char *file, int line, const char *func, const char *a, const char *b,
		const char *va, const char *vb), cmp_msg_s(&m, a, b, va, vb))
ENTRIES(errno, (const char *file, int line, const char *func, const char *expr, int want,
		int got), errno_msg(&m, expr, want, got))
#undef CMP_PARAMS
#undef ENTRIES

void gc__syscall_fail(const char *file, int line, const char *func, const char *expr)
{
	int saved = errno;
	const char *name = strerrorname_np(saved);

	print_location(file, line, func);
	fprintf(stderr, "Failed call: %s returned -1: errno %d (%s, %s)\n", expr, saved,
		name ? name : "?", strerror(saved));
	leave(GC_FAIL);
}

/* ------------------------------------------------------ crash reporting */

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP };

static void write_str(int fd, const char *s)
{
	ssize_t r = write(fd, s, strlen(s));

	(void)r;
}

/* Async-signal context: only write(2) and stack buffers. */
static void crash_line(const char *kind, const char *name, uint64_t start)
{
	char line[400];
	uint64_t ns = gc_now_ns() - start;

	snprintf(line, sizeof(line), "%s %s: CRASH (%llu.%03llus)\n", kind, name,
		 (unsigned long long)(ns / 1000000000u),
		 (unsigned long long)(ns / 1000000u % 1000u));
	write_str(STDOUT_FILENO, line);
}

static void crash_handler(int sig)
{
	const char *abbrev = sigabbrev_np(sig);

	write_str(STDERR_FILENO, "Received signal SIG");
	write_str(STDERR_FILENO, abbrev ? abbrev : "?");
	write_str(STDERR_FILENO, ".\n");
	if (gc.in_dynamic)
		crash_line("Dynamic subtest", gc.dynamic, gc.dynamic_start);
	if (gc.subtest)
		crash_line("Subtest", gc.subtest, gc.subtest_start);
	/* SA_RESETHAND restored the default action: die of the same signal. */
	raise(sig);
}

static void set_crash_handlers(bool install)
{
	static char altstack[64 * 1024];
	struct sigaction sa = { .sa_handler = SIG_DFL };
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };

	if (install) {
		sigaltstack(&ss, NULL);
		sa.sa_handler = crash_handler;
		sa.sa_flags = SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
	}
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &sa, NULL);
}

/* ---------------------------------------------------- forked children */

static void child_main(void (*fn)(void *), void *arg)
{
	struct rlimit no_core = { 0, 0 };

	gc.in_child = true;
	gc.n_checks = gc.dyn_mark = 0; /* the parent's checks stay the parent's */
	set_crash_handlers(false);
	setrlimit(RLIMIT_CORE, &no_core);
	fn(arg);
	fflush(stdout);
	if (checks_verdict(0, "the forked child") == GC_FAIL)
		_exit(GC_EXIT_FAILURE);
	fflush(stderr);
	_exit(0);
}

static int wait_child(pid_t pid, unsigned timeout_ms, int *status)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)timeout_ms * 1000000u;
	struct timespec nap = { 0, 1000000 };

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (gc_now_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
	}
}

int gc_fork_run(void (*fn)(void *arg), void *arg, unsigned timeout_ms,
		struct gc_child_status *st)
{
	int status = 0, r;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child_main(fn, arg);
	r = wait_child(pid, timeout_ms, &status);
	if (r == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		*st = (struct gc_child_status){ GC_CHILD_TIMED_OUT, 0 };
		return 0;
	}
	if (r)
		return r;
	if (WIFSIGNALED(status))
		*st = (struct gc_child_status){ GC_CHILD_SIGNALED, WTERMSIG(status) };
	else
		*st = (struct gc_child_status){ GC_CHILD_EXITED, WEXITSTATUS(status) };
	return 0;
}

const char *gc__child_fate(const struct gc_child_status *st, char *buf, size_t len)
{
	const char *abbrev;

	switch (st->fate) {
	case GC_CHILD_EXITED:
		snprintf(buf, len, "exited with status %d", st->code);
		break;
	case GC_CHILD_SIGNALED:
		abbrev = sigabbrev_np(st->code);
		snprintf(buf, len, "died of signal %d (SIG%s)", st->code, abbrev ? abbrev : "?");
		break;
	case GC_CHILD_TIMED_OUT:
		snprintf(buf, len, "was still running at the timeout and was killed");
		break;
	}
	return buf;
}

static void run_child_or_fail(const char *file, int line, const char *func,
			      void (*fn)(void *), void *arg, unsigned timeout_ms,
			      struct gc_child_status *st)
{
	int r = gc_fork_run(fn, arg, timeout_ms, st);

	if (r)
		gc__fail(file, line, func, "could not run a child: %s", strerror(-r));
}

void gc__expect_child_signal(const char *file, int line, const char *func,
			     void (*fn)(void *), void *arg, int sig, unsigned timeout_ms)
{
	struct gc_child_status st;
	char fate[128];
	const char *abbrev = sigabbrev_np(sig);

	run_child_or_fail(file, line, func, fn, arg, timeout_ms, &st);
	if (st.fate != GC_CHILD_SIGNALED || st.code != sig)
		gc__fail(file, line, func, "child %s, expected death by signal %d (SIG%s)",
			 gc__child_fate(&st, fate, sizeof(fate)), sig, abbrev ? abbrev : "?");
}

void gc__expect_child_exit(const char *file, int line, const char *func,
			   void (*fn)(void *), void *arg, int code, unsigned timeout_ms)
{
	struct gc_child_status st;
	char fate[128];

	run_child_or_fail(file, line, func, fn, arg, timeout_ms, &st);
	if (st.fate != GC_CHILD_EXITED || st.code != code)
		gc__fail(file, line, func, "child %s, expected exit status %d",
			 gc__child_fate(&st, fate, sizeof(fate)), code);
}

/* ------------------------------------------------------------ selection */

static bool name_is_valid(const char *name)
{
	if (!name || !*name)
		return false;
	for (const char *p = name; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_')
			return false;
	return true;
}

static int add_filter(char *glob)
{
	struct gc_filter *f = realloc(gc.filters, (gc.n_filters + 1) * sizeof(*f));
	char *at = strchr(glob, '@');

	if (!f)
		return -ENOMEM;
	gc.filters = f;
	if (at)
		*at = '\0';
	f[gc.n_filters++] = (struct gc_filter){ glob, at ? at + 1 : NULL };
	return 0;
}

/* `a,b@x,c*` -> filters; the string is kept (strdup) for the run's lifetime. */
static int parse_run_subtest(const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int r = add_filter(tok);

		if (r)
			return r;
	}
	return 0;
}

static bool subtest_selected(const char *name)
{
	if (!gc.n_filters)
		return true;
	for (size_t i = 0; i < gc.n_filters; i++)
		if (fnmatch(gc.filters[i].sub, name, 0) == 0)
			return true;
	return false;
}

static bool dynamic_selected(const char *name)
{
	bool any = !gc.n_filters;

	if (gc.dyn_glob && fnmatch(gc.dyn_glob, name, 0) != 0)
		return false;
	for (size_t i = 0; i < gc.n_filters && !any; i++)
		if (fnmatch(gc.filters[i].sub, gc.subtest, 0) == 0)
			any = !gc.filters[i].dyn || fnmatch(gc.filters[i].dyn, name, 0) == 0;
	return any;
}

/* ------------------------------------------------------ dynamic subtests */

/* Its cleanups run before its verdict: a failing one fails it. */
static void end_dynamic(enum gc_result r)
{
	r = worse(r, run_deferred(gc.dyn_defer_mark, &gc.dynamic_jmp));
	r = worse(r, checks_verdict(gc.dyn_mark, gc.dynamic));
	printf("Dynamic subtest %s: %s (%.3fs)\n", gc.dynamic, result_names[r],
	       seconds_since(gc.dynamic_start));
	fflush(stdout);
	gc.dyn_counts[r]++;
	gc.in_dynamic = false;
}

void gc_dynamic(const char *name, void (*fn)(void *arg), void *arg)
{
	if (!gc.subtest || gc.in_dynamic)
		gc_fail("gc_dynamic(\"%s\") called outside a subtest or inside another dynamic "
			"subtest", name);
	if (!name_is_valid(name) || strlen(name) >= sizeof(gc.dynamic))
		gc_fail("invalid dynamic subtest name \"%s\" (use [A-Za-z0-9_-])", name);
	gc.dyn_seen = true;
	if (!dynamic_selected(name))
		return;
	snprintf(gc.dynamic, sizeof(gc.dynamic), "%s", name);
	printf("Starting dynamic subtest: %s\n", name);
	fflush(stdout);
	gc.dynamic_start = gc_now_ns();
	gc.dyn_mark = gc.n_checks;
	gc.dyn_defer_mark = gc.n_deferred;
	gc.in_dynamic = true;
	if (sigsetjmp(gc.dynamic_jmp, 1) == 0) {
		fn(arg);
		end_dynamic(GC_SUCCESS);
	} else {
		end_dynamic(gc.jump_result);
	}
}

void gc_dynamic_f(void (*fn)(void *arg), void *arg, const char *fmt, ...)
{
	char name[256];

	GC_VFORMAT(name, sizeof(name), fmt);
	gc_dynamic(name, fn, arg);
}

const char *gc__case_name(char *buf, size_t len, const char *fmt, ...)
{
	GC_VFORMAT(buf, len, fmt);
	return buf;
}

/* One case of a matrix, as gc_dynamic() hands it to run_case(). */
struct case_call {
	void (*run)(void *ctx, const void *c);
	void (*run_pair)(void *ctx, const void *a, const void *b);
	void *ctx;
	const void *a, *b;
};

static void run_case(void *arg)
{
	const struct case_call *k = arg;

	if (k->run_pair)
		k->run_pair(k->ctx, k->a, k->b);
	else
		k->run(k->ctx, k->a);
}

static const void *case_at(const struct gc_cases *cs, size_t i)
{
	return (const char *)cs->first + i * cs->size;
}

void gc_each_case(const struct gc_cases *cases, void *ctx)
{
	char name[256];

	for (size_t i = 0; i < cases->n; i++) {
		struct case_call k = { .run = cases->run, .ctx = ctx, .a = case_at(cases, i) };

		gc_dynamic(cases->name(k.a, name, sizeof(name)), run_case, &k);
	}
}

static bool pair_wanted(enum gc_pairs which, size_t i, size_t j)
{
	return which == GC_PAIRS_ALL || (which == GC_PAIRS_DISTINCT ? i != j : i < j);
}

void gc_each_pair(const struct gc_product *p, void *ctx)
{
	char name[256];

	for (size_t i = 0; i < p->a.n; i++) {
		for (size_t j = 0; j < p->b.n; j++) {
			struct case_call k = { .run_pair = p->run, .ctx = ctx,
					       .a = case_at(&p->a, i), .b = case_at(&p->b, j) };

			if (pair_wanted(p->pairs, i, j))
				gc_dynamic(p->name(k.a, k.b, name, sizeof(name)), run_case, &k);
		}
	}
}

/* ------------------------------------------------------------ devices */

/* One device (a), pair (a, b) or device and case (a, c) of gc_each_device*(). */
struct device_call {
	const struct gc_devices *devs;
	void (*one)(void *ctx, const void *dev);
	void (*two)(void *ctx, const void *a, const void *b);
	void *ctx;
	const void *a, *b;
	size_t i, j;   /* places of a and b in the list */
	bool b_device; /* b is a device (a pair), not a case */
};

static const void *device_at(const struct gc_devices *devs, size_t i)
{
	return (const char *)devs->first + i * devs->size;
}

/* `<kind><N>` of the device at place i into buf. */
static const char *device_label(const struct gc_devices *devs, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s%ld", devs->kind ? devs->kind : "gpu",
		 devs->index(device_at(devs, i), i));
	return buf;
}

static long ordinal_index(const void *dev, size_t i)
{
	(void)dev;
	return gc_device_index((int)i);
}

struct gc_devices gc_runtime_devices(const void *first, int n_devices, size_t size, int n)
{
	size_t count = n < 0 || n > n_devices ? (size_t)n_devices : (size_t)n;

	return (struct gc_devices){ .first = first, .n = count, .size = size,
				    .index = ordinal_index };
}

static void print_device_id(const struct gc_devices *devs, size_t i)
{
	char name[64], id[128];

	if (devs->id)
		gc_info("%s: %s", device_label(devs, i, name, sizeof(name)),
			devs->id(device_at(devs, i), id, sizeof(id)));
}

static void run_device(void *arg)
{
	const struct device_call *k = arg;

	print_device_id(k->devs, k->i);
	if (k->b_device)
		print_device_id(k->devs, k->j);
	if (k->two)
		k->two(k->ctx, k->a, k->b);
	else
		k->one(k->ctx, k->a);
}

void gc_each_device(const struct gc_devices *devs, void (*body)(void *ctx, const void *dev),
		    void *ctx)
{
	char name[64];

	for (size_t i = 0; i < devs->n; i++) {
		struct device_call k = { .devs = devs, .one = body, .ctx = ctx,
					 .a = device_at(devs, i), .i = i };

		gc_dynamic(device_label(devs, i, name, sizeof(name)), run_device, &k);
	}
}

/* Device i with the j-th of cases (a table) or, cases NULL, of the devices. */
static void each_second(const struct gc_devices *devs, enum gc_pairs which,
			const struct gc_cases *cases,
			void (*body)(void *ctx, const void *a, const void *b), void *ctx)
{
	size_t n_second = cases ? cases->n : devs->n;
	char name[320], na[64], nb[256];

	for (size_t i = 0; i < devs->n; i++) {
		for (size_t j = 0; j < n_second; j++) {
			struct device_call k = { .devs = devs, .two = body, .ctx = ctx,
						 .a = device_at(devs, i), .i = i, .j = j,
						 .b_device = !cases };

			if (!cases && !pair_wanted(which, i, j))
				continue;
			k.b = cases ? case_at(cases, j) : device_at(devs, j);
			snprintf(name, sizeof(name), "%s-%s", device_label(devs, i, na, sizeof(na)),
				 cases ? cases->name(k.b, nb, sizeof(nb))
				       : device_label(devs, j, nb, sizeof(nb)));
			gc_dynamic(name, run_device, &k);
		}
	}
}

void gc_each_device_pair(const struct gc_devices *devs, enum gc_pairs which,
			 void (*body)(void *ctx, const void *a, const void *b), void *ctx)
{
	each_second(devs, which, NULL, body, ctx);
}

void gc_each_device_case(const struct gc_devices *devs, const struct gc_cases *cases,
			 void (*body)(void *ctx, const void *dev, const void *c), void *ctx)
{
	each_second(devs, GC_PAIRS_ALL, cases, body, ctx);
}

/* A subtest that ran dynamic subtests takes its result from them. */
static enum gc_result dynamic_verdict(void)
{
	if (gc.dyn_counts[GC_FAIL])
		return GC_FAIL;
	if (gc.dyn_counts[GC_SUCCESS])
		return GC_SUCCESS;
	printf("Skip reason: %s\n", gc.dyn_counts[GC_SKIP] ? "every dynamic subtest skipped"
							   : "no dynamic subtest matched the filter");
	return GC_SKIP;
}

/* -------------------------------------------------------------- fixture */

static void run_fixture_setup(void)
{
	const struct gc_fixture *fx = gc.test->fixture;

	gc.fixture_ran = true;
	gc.fixture_result = GC_SUCCESS;
	if (!fx || !fx->setup)
		return;
	gc.jump_target = JUMP_FIXTURE;
	if (sigsetjmp(gc.fixture_jmp, 1) == 0)
		gc.fixture_data = fx->setup();
	else
		gc.fixture_result = gc.jump_result;
	/* A setup that did not succeed is never torn down: its cleanups run now. */
	if (gc.fixture_result != GC_SUCCESS)
		gc.fixture_result = worse(gc.fixture_result, run_deferred(0, &gc.fixture_jmp));
	gc.fixture_result = worse(gc.fixture_result, checks_verdict(0, "the fixture's setup"));
	gc.jump_target = JUMP_NONE;
}

/* teardown(), then the cleanups its setup deferred (last first). */
static void run_fixture_teardown(void)
{
	const struct gc_fixture *fx = gc.test->fixture;
	enum gc_result r;

	if (!gc.fixture_ran || gc.fixture_result != GC_SUCCESS)
		return;
	gc.jump_target = JUMP_FIXTURE;
	gc.jump_result = GC_SUCCESS;
	if (fx && fx->teardown) {
		if (sigsetjmp(gc.fixture_jmp, 1) == 0)
			fx->teardown(gc.fixture_data);
	}
	r = worse(gc.jump_result, run_deferred(0, &gc.fixture_jmp));
	if (worse(r, checks_verdict(0, "the fixture's teardown")) == GC_FAIL)
		gc.counts[GC_FAIL]++; /* a teardown failure fails the run */
	gc.jump_target = JUMP_NONE;
}

/* A fixture that skipped or failed decides every subtest after it. */
static bool fixture_decides(enum gc_result *r)
{
	if (gc.fixture_result == GC_SUCCESS)
		return false;
	if (gc.fixture_result == GC_SKIP)
		printf("Skip reason: %s\n", gc.fixture_reason);
	else
		fprintf(stderr, "fixture setup failed; subtest not run\n");
	*r = gc.fixture_result;
	return true;
}

/* ------------------------------------------------------------- subtests */

static enum gc_result run_hook(void (*hook)(void *))
{
	if (!hook)
		return GC_SUCCESS;
	if (sigsetjmp(gc.subtest_jmp, 1) == 0) {
		hook(gc.fixture_data);
		return GC_SUCCESS;
	}
	return gc.jump_result;
}

static enum gc_result run_body(const struct gc_subtest *st)
{
	memset(gc.dyn_counts, 0, sizeof(gc.dyn_counts));
	gc.dyn_seen = false;
	if (sigsetjmp(gc.subtest_jmp, 1) == 0) {
		st->fn(gc.fixture_data);
		if (gc.dyn_seen)
			return dynamic_verdict();
		return GC_SUCCESS;
	}
	return gc.jump_result;
}

static void run_subtest(const struct gc_subtest *st)
{
	const struct gc_fixture *fx = gc.test->fixture;
	enum gc_result r;

	printf("Starting subtest: %s\n", st->name);
	fflush(stdout);
	gc.subtest = st->name;
	gc.subtest_soaks = in_soaks(st->name);
	gc.subtest_start = gc_now_ns();
	if (!gc.fixture_ran)
		run_fixture_setup();
	gc.sub_defer_mark = gc.n_deferred;
	if (!fixture_decides(&r)) {
		r = run_hook(fx ? fx->before_each : NULL);
		if (r == GC_SUCCESS)
			r = run_body(st);
		/* The cleanups run before after_each()'s leak check, and after it for its own. */
		r = worse(r, run_deferred(gc.sub_defer_mark, &gc.subtest_jmp));
		r = worse(r, run_hook(fx ? fx->after_each : NULL));
		r = worse(r, run_deferred(gc.sub_defer_mark, &gc.subtest_jmp));
	}
	r = worse(r, checks_verdict(0, st->name));
	fflush(stderr);
	printf("Subtest %s: %s (%.3fs)\n", st->name, result_names[r],
	       seconds_since(gc.subtest_start));
	fflush(stdout);
	gc.counts[r]++;
	gc.subtest = NULL;
}

/* --------------------------------------------------------- command line */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [OPTIONS]\n"
		"  --list-subtests           list the subtests, one a line\n"
		"  --run-subtest GLOB[,GLOB] run matching subtests (SUB@DYN selects dynamic ones)\n"
		"  --dynamic-subtest GLOB    run only matching dynamic subtests\n"
		"  --describe[=GLOB]         print subtest descriptions\n"
		"  --list-soak               list the subtests whose length the level sets\n"
		"  --list-placement          list each subtest and where it runs: gpu, gpu-alone,\n"
		"                            node or host\n"
		"  --help                    this text\n"
		"Without options every subtest runs. Exit status: 0 success, 77 skip,\n"
		"79 invalid option or subtest, 98 failure, 112 abort.\n"
		"Metrics are appended as JSON lines to $%s when it is set.\n",
		argv0, GC_METRICS_ENV);
}

static void list_subtests(bool soak_only)
{
	for (const struct gc_subtest *st = gc.test->subtests; st->name; st++)
		if (!soak_only || in_soaks(st->name))
			printf("%s\n", st->name);
}

static void list_placement(void)
{
	for (const struct gc_subtest *st = gc.test->subtests; st->name; st++)
		printf("%s %s\n", st->name, placement_names[placement_of(st->name)]);
}

static void describe(const char *glob)
{
	if (!glob && gc.test->description)
		printf("%s\n\n", gc.test->description);
	for (const struct gc_subtest *st = gc.test->subtests; st->name; st++) {
		if (glob && fnmatch(glob, st->name, 0) != 0)
			continue;
		printf("SUB %s:\n  %s\n\n", st->name,
		       st->description ? st->description : "(no description)");
	}
}

/*
 * Every --run-subtest glob must name at least one subtest (igt_core warns
 * `Unknown subtest: %s` [src drm/igt-gpu-tools lib/igt_core.c @ b3d809d537fe]).
 */
static int check_filters(void)
{
	for (size_t i = 0; i < gc.n_filters; i++) {
		bool hit = false;

		for (const struct gc_subtest *st = gc.test->subtests; st->name && !hit; st++)
			hit = fnmatch(gc.filters[i].sub, st->name, 0) == 0;
		if (!hit) {
			fprintf(stderr, "%s: Unknown subtest: %s\n", gc.name, gc.filters[i].sub);
			return -ENOENT;
		}
	}
	return 0;
}

/* name is a subtest of the table; what names it (a soak, a rule) is told otherwise. */
static bool in_table(const char *name, const char *what)
{
	for (const struct gc_subtest *st = gc.test->subtests; st->name; st++)
		if (!strcmp(st->name, name))
			return true;
	fprintf(stderr, "%s: %s \"%s\" names no subtest of the test table\n", gc.name, what,
		name);
	return false;
}

static int check_table(void)
{
	for (const struct gc_subtest *st = gc.test->subtests; st->name; st++) {
		if (!name_is_valid(st->name) || !st->fn) {
			fprintf(stderr, "%s: invalid subtest \"%s\" in the test table\n", gc.name,
				st->name);
			return -EINVAL;
		}
	}
	for (const char *const *name = gc.test->soaks; name && *name; name++)
		if (!in_table(*name, "soak"))
			return -EINVAL;
	if ((unsigned)gc.test->placement >= ARRAY_SIZE(placement_names)) {
		fprintf(stderr, "%s: placement %d is not one of enum gc_placement\n", gc.name,
			(int)gc.test->placement);
		return -EINVAL;
	}
	for (const struct gc_placement_rule *r = gc.test->placements; r && r->subtest; r++) {
		if (!in_table(r->subtest, "placement rule"))
			return -EINVAL;
		if ((unsigned)r->where >= ARRAY_SIZE(placement_names)) {
			fprintf(stderr, "%s: placement rule \"%s\": %d is not one of enum "
				"gc_placement\n", gc.name, r->subtest, (int)r->where);
			return -EINVAL;
		}
	}
	return 0;
}

enum action { ACT_RUN, ACT_LIST, ACT_LIST_SOAK, ACT_LIST_PLACEMENT, ACT_DESCRIBE, ACT_HELP,
	      ACT_INVALID };

static enum action parse_args(int argc, char **argv, const char **describe_glob)
{
	enum { OPT_LIST = 256, OPT_LIST_SOAK, OPT_LIST_PLACEMENT, OPT_RUN, OPT_DYN, OPT_DESCRIBE,
	       OPT_HELP };
	static const struct option opts[] = {
		{ "list-subtests", no_argument, NULL, OPT_LIST },
		{ "list-soak", no_argument, NULL, OPT_LIST_SOAK },
		{ "list-placement", no_argument, NULL, OPT_LIST_PLACEMENT },
		{ "run-subtest", required_argument, NULL, OPT_RUN },
		{ "dynamic-subtest", required_argument, NULL, OPT_DYN },
		{ "describe", optional_argument, NULL, OPT_DESCRIBE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 }
	};
	enum action act = ACT_RUN;
	int c;

	opterr = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == OPT_LIST && act == ACT_RUN)
			act = ACT_LIST;
		else if (c == OPT_LIST_SOAK && act == ACT_RUN)
			act = ACT_LIST_SOAK;
		else if (c == OPT_LIST_PLACEMENT && act == ACT_RUN)
			act = ACT_LIST_PLACEMENT;
		else if (c == OPT_RUN && parse_run_subtest(optarg))
			return ACT_INVALID;
		else if (c == OPT_DYN)
			gc.dyn_glob = optarg;
		else if (c == OPT_DESCRIBE)
			act = ACT_DESCRIBE, *describe_glob = optarg;
		else if (c == OPT_HELP || c == 'h')
			return ACT_HELP;
		else if (c == '?')
			return ACT_INVALID;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument: %s\n", gc.name, argv[optind]);
		return ACT_INVALID;
	}
	return act;
}

static void print_banner(void)
{
	struct utsname u;

	if (uname(&u) == 0)
		printf("gpuconform-Version: %s (%s) (Linux: %s %s)\n", GPUCONFORM_VERSION,
		       u.machine, u.release, u.machine);
	fflush(stdout);
}

static int exit_status(void)
{
	if (gc.counts[GC_FAIL])
		return GC_EXIT_FAILURE;
	if (gc.counts[GC_SUCCESS])
		return GC_EXIT_SUCCESS;
	return GC_EXIT_SKIP;
}

static int run_selected(void)
{
	set_crash_handlers(true);
	print_banner();
	for (const struct gc_subtest *st = gc.test->subtests; st->name; st++)
		if (subtest_selected(st->name))
			run_subtest(st);
	run_fixture_teardown();
	return exit_status();
}

int gc_main(const struct gc_test *test, int argc, char **argv)
{
	const char *describe_glob = NULL;
	enum action act;

	gc.test = test;
	gc.name = test->name ? test->name : program_invocation_short_name;
	gc.main_tid = gettid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (check_table())
		return GC_EXIT_INVALID;
	act = parse_args(argc, argv, &describe_glob);
	switch (act) {
	case ACT_HELP:
		usage(stdout, gc.name);
		return GC_EXIT_SUCCESS;
	case ACT_INVALID:
		usage(stderr, gc.name);
		return GC_EXIT_INVALID;
	case ACT_LIST:
	case ACT_LIST_SOAK:
		list_subtests(act == ACT_LIST_SOAK);
		return GC_EXIT_SUCCESS;
	case ACT_LIST_PLACEMENT:
		list_placement();
		return GC_EXIT_SUCCESS;
	case ACT_DESCRIBE:
		describe(describe_glob);
		return GC_EXIT_SUCCESS;
	case ACT_RUN:
		break;
	}
	if (check_filters())
		return GC_EXIT_INVALID;
	return run_selected();
}
