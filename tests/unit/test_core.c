// SPDX-License-Identifier: MIT
/*
 * The framework checked from outside: each subtest runs a selftest binary
 * and compares its exit status, its exact protocol lines and its metrics
 * JSON with what igt_core's protocol and lib/core.h promise.
 * $GPUCONFORM_SELFTEST_DIR names the directory of the selftest binaries.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct run {
	int status;     /* as waitpid gives it */
	char out[8192]; /* stdout, banner removed, `(1.234s)` -> `(T)` */
	char err[8192];
};

static void read_fd(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	gc_assert_f(n >= 0, "reading captured output: %s", strerror(errno));
	buf[n] = '\0';
	close(fd);
}

/* Replace every `(D.DDDs)` with `(T)` and drop the version banner line. */
static void normalise(char *s)
{
	regex_t re;
	regmatch_t m;
	char *p = s;

	if (strncmp(s, "gpuconform-Version: ", 20) == 0) {
		char *nl = strchr(s, '\n');

		memmove(s, nl + 1, strlen(nl + 1) + 1);
	}
	gc_assert_eq_int(regcomp(&re, "\\([0-9]+\\.[0-9]{3}s\\)", REG_EXTENDED), 0);
	while (regexec(&re, p, 1, &m, 0) == 0) {
		memcpy(p + m.rm_so, "(T)", 3);
		memmove(p + m.rm_so + 3, p + m.rm_eo, strlen(p + m.rm_eo) + 1);
		p += m.rm_so + 3;
	}
	regfree(&re);
}

static void exec_selftest(const char *bin, char *const argv[], int out, int err)
{
	const char *dir = getenv("GPUCONFORM_SELFTEST_DIR");
	char path[4096];

	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	snprintf(path, sizeof(path), "%s/%s", dir, bin);
	execv(path, argv);
	_exit(127);
}

/* Runs SELFTEST_DIR/bin with the arguments (NULL-terminated) and captures everything. */
static void run_selftest(struct run *r, const char *bin, char *const argv[])
{
	int out = memfd_create("stdout", 0), err = memfd_create("stderr", 0);
	pid_t pid;

	gc_require_f(getenv("GPUCONFORM_SELFTEST_DIR"),
		     "GPUCONFORM_SELFTEST_DIR is not set (run through `meson test`)");
	gc_assert_syscall(out);
	gc_assert_syscall(err);
	fflush(stdout);
	pid = fork();
	gc_assert_syscall(pid);
	if (pid == 0)
		exec_selftest(bin, argv, out, err);
	gc_assert_syscall(waitpid(pid, &r->status, 0));
	read_fd(out, r->out, sizeof(r->out));
	read_fd(err, r->err, sizeof(r->err));
	normalise(r->out);
}

#define RUN(r, bin, ...) run_selftest(r, bin, (char *const[]){ bin, __VA_ARGS__, NULL })

static void assert_exit(const struct run *r, int code)
{
	gc_assert_f(WIFEXITED(r->status), "status 0x%x, stdout:\n%s\nstderr:\n%s", r->status,
		    r->out, r->err);
	gc_assert_f(WEXITSTATUS(r->status) == code, "exit %d, expected %d; stdout:\n%s",
		    WEXITSTATUS(r->status), code, r->out);
}

static void assert_contains(const char *haystack, const char *needle)
{
	gc_assert_f(strstr(haystack, needle), "\"%s\" not found in:\n%s", needle, haystack);
}

static void list(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--list-subtests");
	assert_exit(&r, 0);
	gc_assert_eq_str(r.out, "pass\nfail\nskip\ncrash-segv\ncrash-abort\nabort\n"
				"child-segv\nchild-survives\nchild-hangs\nthread-fail\n");
}

static void pass(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "pass");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "Starting subtest: pass\nSubtest pass: SUCCESS (T)\n");
}

static void fail(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "fail");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: fail\nSubtest fail: FAIL (T)\n");
	assert_contains(r.err, "results.c:");
	assert_contains(r.err, "Failed assertion: got == 4\n  got = 5\n");
}

static void skip(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "skip");
	assert_exit(&r, GC_EXIT_SKIP);
	gc_assert_eq_str(r.out, "Starting subtest: skip\n"
				"Skip reason: selftest: skipped on purpose (42)\n"
				"Subtest skip: SKIP (T)\n");
}

static void crash_with(const char *subtest, int sig)
{
	char want[128];
	struct run r;

	RUN(&r, "selftest_results", "--run-subtest", (char *)subtest);
	gc_assert_f(WIFSIGNALED(r.status), "status 0x%x: expected death by signal", r.status);
	gc_assert_eq_int(WTERMSIG(r.status), sig);
	snprintf(want, sizeof(want), "Starting subtest: %s\nSubtest %s: CRASH (T)\n", subtest,
		 subtest);
	gc_assert_eq_str(r.out, want);
	snprintf(want, sizeof(want), "Received signal SIG%s.", sigabbrev_np(sig));
	assert_contains(r.err, want);
}

static void crash(void *fx)
{
	(void)fx;
	crash_with("crash-segv", SIGSEGV);
	crash_with("crash-abort", SIGABRT);
}

static void abort_exit(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "abort,child-segv");
	assert_exit(&r, GC_EXIT_ABORT);
	gc_assert_eq_str(r.out, "Starting subtest: abort\n");
	assert_contains(r.err, "Test abort in abort: selftest: the system is in no state to go on");
}

static void invalid(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "no-such-subtest");
	assert_exit(&r, GC_EXIT_INVALID);
	assert_contains(r.err, "Unknown subtest: no-such-subtest");
	gc_assert_eq_str(r.out, "");
	RUN(&r, "selftest_results", "--no-such-option");
	assert_exit(&r, GC_EXIT_INVALID);
	assert_contains(r.err, "Usage:");
	RUN(&r, "selftest_results", "stray-argument");
	assert_exit(&r, GC_EXIT_INVALID);
	RUN(&r, "selftest_results", "--help");
	assert_exit(&r, GC_EXIT_SUCCESS);
	assert_contains(r.out, "--run-subtest");
}

static void filters(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "sk*,pass");
	assert_exit(&r, GC_EXIT_SUCCESS); /* a success and a skip: success */
	gc_assert_eq_str(r.out, "Starting subtest: pass\nSubtest pass: SUCCESS (T)\n"
				"Starting subtest: skip\n"
				"Skip reason: selftest: skipped on purpose (42)\n"
				"Subtest skip: SKIP (T)\n");
	RUN(&r, "selftest_results", "--run-subtest", "pass,fail");
	assert_exit(&r, GC_EXIT_FAILURE); /* any failure fails the run */
}

static void children(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "child-segv");
	assert_exit(&r, GC_EXIT_SUCCESS);
	RUN(&r, "selftest_results", "--run-subtest", "child-survives");
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.err, "child exited with status 0, expected death by signal 11 (SIGSEGV)");
	RUN(&r, "selftest_results", "--run-subtest", "child-hangs");
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.err, "child was still running at the timeout and was killed");
}

static void thread_failure(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_results", "--run-subtest", "thread-fail");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: thread-fail\nSubtest thread-fail: FAIL (T)\n");
	assert_contains(r.err, "a helper thread's assertion failed");
	assert_contains(r.err, "happened in a helper thread");
}

static void dynamic(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_dynamic", "--run-subtest", "mixed");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: mixed\n"
				"Starting dynamic subtest: pass-0\n"
				"Dynamic subtest pass-0: SUCCESS (T)\n"
				"Starting dynamic subtest: fail-1\n"
				"Dynamic subtest fail-1: FAIL (T)\n"
				"Starting dynamic subtest: skip-2\n"
				"Skip reason: dynamic skip 2\n"
				"Dynamic subtest skip-2: SKIP (T)\n"
				"Subtest mixed: FAIL (T)\n");
	RUN(&r, "selftest_dynamic", "--run-subtest", "mixed@pass-*");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "Starting subtest: mixed\n"
				"Starting dynamic subtest: pass-0\n"
				"Dynamic subtest pass-0: SUCCESS (T)\n"
				"Subtest mixed: SUCCESS (T)\n");
	RUN(&r, "selftest_dynamic", "--run-subtest", "filtered", "--dynamic-subtest", "zzz");
	assert_exit(&r, GC_EXIT_SKIP);
	assert_contains(r.out, "Skip reason: no dynamic subtest matched the filter\n");
	RUN(&r, "selftest_dynamic", "--run-subtest", "bad-name");
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.err, "invalid dynamic subtest name \"has space\"");
}

static void fixture(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_fixture", "--run-subtest", "*");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: clean\nSubtest clean: SUCCESS (T)\n"
				"Starting subtest: leaky\nSubtest leaky: FAIL (T)\n");
	assert_contains(r.err, "leak: 1 resource(s) open after the subtest, 0 before");
	gc_assert_syscall(setenv("GPUCONFORM_SELFTEST_FIXTURE_SKIP", "1", 1));
	RUN(&r, "selftest_fixture", "--run-subtest", "*");
	unsetenv("GPUCONFORM_SELFTEST_FIXTURE_SKIP");
	assert_exit(&r, GC_EXIT_SKIP);
	gc_assert_eq_str(r.out, "Starting subtest: clean\n"
				"Skip reason: fixture: no device (GPUCONFORM_SELFTEST_FIXTURE_SKIP=1)\n"
				"Subtest clean: SKIP (T)\n"
				"Starting subtest: leaky\n"
				"Skip reason: fixture: no device (GPUCONFORM_SELFTEST_FIXTURE_SKIP=1)\n"
				"Subtest leaky: SKIP (T)\n");
}

static void metrics_json(void *fx)
{
	char path[] = "/tmp/gpuconform-metrics-XXXXXX", json[2048];
	int fd = mkstemp(path);
	struct run r;

	(void)fx;
	gc_assert_syscall(fd);
	gc_assert_syscall(setenv(GC_METRICS_ENV, path, 1));
	RUN(&r, "selftest_metrics", "--run-subtest", "metrics");
	unsetenv(GC_METRICS_ENV);
	unlink(path);
	read_fd(fd, json, sizeof(json));
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(json,
		"{\"test\":\"selftest_metrics\",\"subtest\":\"metrics\",\"dynamic\":null,"
		"\"name\":\"latency\",\"unit\":\"ns\",\"better\":\"lower\","
		"\"samples\":[1200,1100,1150,1300,1125]}\n"
		"{\"test\":\"selftest_metrics\",\"subtest\":\"metrics\",\"dynamic\":null,"
		"\"name\":\"bandwidth\",\"unit\":\"MB/s\",\"better\":\"higher\","
		"\"samples\":[810.5,799.25,805]}\n");
	assert_contains(r.out, "Metric latency: n=5 median=1150 ");
}

static void metrics_errors(void *fx)
{
	struct run r;

	(void)fx;
	gc_assert_syscall(setenv(GC_METRICS_ENV, "/nonexistent-dir/metrics.jsonl", 1));
	RUN(&r, "selftest_metrics", "--run-subtest", "metrics");
	unsetenv(GC_METRICS_ENV);
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.err, "/nonexistent-dir/metrics.jsonl: No such file or directory");
	RUN(&r, "selftest_metrics", "--run-subtest", "bad-name");
	assert_exit(&r, GC_EXIT_FAILURE);
	RUN(&r, "selftest_metrics", "--run-subtest", "not-finite");
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.err, "sample 1 is not finite");
}

/* lib/core.h: a failed check records the failure and lets the body go on. */
static void checks(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_checks", "--run-subtest", "checks-fail");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: checks-fail\n"
				"still running after the failed checks\n"
				"Subtest checks-fail: FAIL (T)\n");
	assert_contains(r.err, "checks.c:15: checks_fail(): Failed check: got == 4\n"
			       "  got = 5\n  4 = 4\n");
	assert_contains(r.err, "FAIL: 2 failed checks in checks-fail:\n"
			       "  ../tests/selftest/checks.c:15: checks_fail(): Failed check: "
			       "got == 4; got = 5; 4 = 4\n"
			       "  ../tests/selftest/checks.c:17: checks_fail(): Failed check: "
			       "\"abc\" == \"abd\"; \"abc\" = \"abc\"; \"abd\" = \"abd\"\n");
	RUN(&r, "selftest_checks", "--run-subtest", "checks-pass");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.err, "");
}

/*
 * lib/core.h: a later fatal assert, fail or skip still leaves at once; the
 * checks recorded before it are listed.
 */
static void checks_then_leave(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_checks", "--run-subtest", "check-then-assert");
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.err, "Failed assertion: 3 < 2\n");
	assert_contains(r.err, "FAIL: 1 failed check in check-then-assert:\n"
			       "  ../tests/selftest/checks.c:32: check_then_assert(): Failed check: "
			       "1 == 2; first broken promise (1)\n");
	RUN(&r, "selftest_checks", "--run-subtest", "check-then-skip");
	assert_exit(&r, GC_EXIT_FAILURE);
	assert_contains(r.out, "Subtest check-then-skip: FAIL (T)\n");
	RUN(&r, "selftest_checks", "--run-subtest", "forked-check");
	assert_exit(&r, GC_EXIT_SUCCESS); /* the child exited 98, as the subtest expects */
	assert_contains(r.err, "FAIL: 1 failed check in the forked child:\n");
}

#define DYN(n) "Starting dynamic subtest: " n "\nDynamic subtest " n ": SUCCESS (T)\n"

/* Each case of a matrix is the dynamic subtest named by its name member or format. */
static void variants(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_checks", "--run-subtest", "variants,variants-f");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: variants\n"
				"Starting dynamic subtest: alpha\nDynamic subtest alpha: SUCCESS (T)\n"
				"Starting dynamic subtest: beta\nDynamic subtest beta: FAIL (T)\n"
				"Starting dynamic subtest: gamma\nDynamic subtest gamma: SUCCESS (T)\n"
				"variants ran 3 cases\n"
				"Subtest variants: FAIL (T)\n"
				"Starting subtest: variants-f\n"
				"Starting dynamic subtest: size-0\nDynamic subtest size-0: SUCCESS (T)\n"
				"Starting dynamic subtest: size-512\n"
				"Dynamic subtest size-512: SUCCESS (T)\n"
				"Starting dynamic subtest: size-4096\n"
				"Dynamic subtest size-4096: SUCCESS (T)\n"
				"Subtest variants-f: SUCCESS (T)\n");
	assert_contains(r.err, "FAIL: 2 failed checks in beta:\n");
	RUN(&r, "selftest_checks", "--run-subtest", "product@n*-here");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: product\n"
				"Starting dynamic subtest: n1-here\nDynamic subtest n1-here: SUCCESS (T)\n"
				"Starting dynamic subtest: n2-here\nDynamic subtest n2-here: FAIL (T)\n"
				"Subtest product: FAIL (T)\n");
	RUN(&r, "selftest_checks", "--run-subtest", "pairs");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "Starting subtest: pairs\n" DYN("ab") DYN("ac") DYN("ba") DYN("bc")
				DYN("ca") DYN("cb") DYN("xy") DYN("xz") DYN("yz")
				"Subtest pairs: SUCCESS (T)\n");
}

/*
 * lib/core.h's device iterator: each device runs as the dynamic subtest
 * `<kind><N>`, each pair as `<kind><A>-<kind><B>`; a failing device ends its
 * own dynamic subtest and the next one runs; the stack's id is printed first.
 */
static void devices_each(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_devices", "--run-subtest", "each,kind");
	assert_exit(&r, GC_EXIT_FAILURE);
	gc_assert_eq_str(r.out, "Starting subtest: each\n"
				"Starting dynamic subtest: gpu0\ngpu0: id 41234\nran id 41234\n"
				"Dynamic subtest gpu0: SUCCESS (T)\n"
				"Starting dynamic subtest: gpu1\ngpu1: id 7\n"
				"Dynamic subtest gpu1: FAIL (T)\n"
				"Starting dynamic subtest: gpu2\ngpu2: id 990\nran id 990\n"
				"Dynamic subtest gpu2: SUCCESS (T)\n"
				"Subtest each: FAIL (T)\n"
				"Starting subtest: kind\n"
				"Starting dynamic subtest: cpu0\nran id 41234\n"
				"Dynamic subtest cpu0: SUCCESS (T)\n"
				"Starting dynamic subtest: cpu2\nDynamic subtest cpu2: FAIL (T)\n"
				"Subtest kind: FAIL (T)\n");
	assert_contains(r.err, "device of id 7 fails on purpose");
	RUN(&r, "selftest_devices", "--run-subtest", "none");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "Starting subtest: none\nSubtest none: SUCCESS (T)\n");
}

/* The pair rule is an argument: distinct, unordered, all; a device and each case of a table. */
static void devices_pairs(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_devices", "--run-subtest", "pairs,pairs-all,cases");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "Starting subtest: pairs\n"
				DYN("gpu0-gpu2") DYN("gpu0-gpu5") DYN("gpu2-gpu0") DYN("gpu2-gpu5")
				DYN("gpu5-gpu0") DYN("gpu5-gpu2")
				DYN("gpu0-gpu2") DYN("gpu0-gpu5") DYN("gpu2-gpu5")
				"Subtest pairs: SUCCESS (T)\n"
				"Starting subtest: pairs-all\n"
				"Starting dynamic subtest: gpu0-gpu0\ngpu0: id 41234\ngpu0: id 41234\n"
				"Dynamic subtest gpu0-gpu0: SUCCESS (T)\n"
				"Starting dynamic subtest: gpu0-gpu2\ngpu0: id 41234\ngpu2: id 7\n"
				"Dynamic subtest gpu0-gpu2: SUCCESS (T)\n"
				"Starting dynamic subtest: gpu2-gpu0\ngpu2: id 7\ngpu0: id 41234\n"
				"Dynamic subtest gpu2-gpu0: SUCCESS (T)\n"
				"Starting dynamic subtest: gpu2-gpu2\ngpu2: id 7\ngpu2: id 7\n"
				"Dynamic subtest gpu2-gpu2: SUCCESS (T)\n"
				"Subtest pairs-all: SUCCESS (T)\n"
				"Starting subtest: cases\n"
				DYN("gpu0-k1") DYN("gpu0-k16") DYN("gpu2-k1") DYN("gpu2-k16")
				DYN("gpu5-k1") DYN("gpu5-k16")
				"Subtest cases: SUCCESS (T)\n");
}

/* A runtime's ordinals named through $GPUCONFORM_DEVICES; n < 0 or past the list: all. */
static void devices_runtime(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_devices", "--run-subtest", "runtime");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "Starting subtest: runtime\n" DYN("gpu3") DYN("gpu1") DYN("gpu2")
				DYN("gpu3") DYN("gpu3-gpu1") "Subtest runtime: SUCCESS (T)\n");
}

/* lib/core.h: a skip prints where it was called on stderr. */
static void skip_location(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_checks", "--run-subtest", "skip-here");
	assert_exit(&r, GC_EXIT_SKIP);
	gc_assert_eq_str(r.out, "Starting subtest: skip-here\n"
				"Skip reason: selftest: skipped with its location (7)\n"
				"Subtest skip-here: SKIP (T)\n");
	gc_assert_eq_str(r.err, "../tests/selftest/checks.c:47: skip_here(): SKIP: "
				"selftest: skipped with its location (7)\n");
}

/* lib/core.h: a device is `gpu<N>`, N its node index from $GPUCONFORM_DEVICES. */
static void device_names(void *fx)
{
	char b[32];

	(void)fx;
	unsetenv(GC_DEVICES_ENV);
	gc_assert_eq_str(gc_device_name(1, b, sizeof(b)), "gpu1");
	setenv(GC_DEVICES_ENV, "3", 1);
	gc_assert_eq_str(gc_device_name(0, b, sizeof(b)), "gpu3");
	gc_assert_eq_str(gc_device_name(1, b, sizeof(b)), "gpu1"); /* past the list: the ordinal */
	setenv(GC_DEVICES_ENV, "0,2,17", 1);
	gc_assert_eq_str(gc_device_name(1, b, sizeof(b)), "gpu2");
	gc_assert_eq_str(gc_device_name(2, b, sizeof(b)), "gpu17");
	gc_assert_eq_int(gc_device_index(2), 17);
	gc_assert_eq_int(gc_device_index(3), 3); /* past the list: the ordinal */
	setenv(GC_DEVICES_ENV, "GPU-1f2e,5x,4", 1); /* not indexes: the ordinal */
	gc_assert_eq_str(gc_device_name(0, b, sizeof(b)), "gpu0");
	gc_assert_eq_str(gc_device_name(1, b, sizeof(b)), "gpu1");
	gc_assert_eq_str(gc_device_name(2, b, sizeof(b)), "gpu4");
	unsetenv(GC_DEVICES_ENV);
}

/* lib/core.h: one copy's share of a node's count, ceil(total / $GPUCONFORM_COPIES). */
static void node_share(void *fx)
{
	static const struct { const char *copies; unsigned long total, share; } cases[] = {
		{ NULL, 100, 100 }, { "1", 100, 100 }, { "4", 100, 25 }, { "3", 100, 34 },
		{ "8", 5, 1 }, { "0", 100, 100 }, { "4x", 100, 100 }, { "", 100, 100 },
	};

	(void)fx;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (cases[i].copies)
			setenv(GC_COPIES_ENV, cases[i].copies, 1);
		else
			unsetenv(GC_COPIES_ENV);
		gc_assert_cmpuint(gc_node_share(cases[i].total), ==, cases[i].share);
	}
	unsetenv(GC_COPIES_ENV);
}

/* --list-placement: every subtest and where it runs, the binary's default and its rules. */
static void list_placement(void *fx)
{
	struct run r;

	(void)fx;
	RUN(&r, "selftest_placement", "--list-placement");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert_eq_str(r.out, "hide-device gpu\nxid gpu\nenv gpu\nrendezvous gpu\nalone gpu-alone\n"
				"fail-on gpu\nnode node\nhost host\n");
	RUN(&r, "selftest_results", "--list-placement");
	assert_exit(&r, GC_EXIT_SUCCESS);
	gc_assert(strstr(r.out, "pass node\n") != NULL);
}

static const struct gc_subtest subtests[] = {
	{ "list", list, "--list-subtests prints every subtest, nothing else" },
	{ "device-names", device_names, "gpu<N> from $GPUCONFORM_DEVICES, else the ordinal" },
	{ "node-share", node_share, "a count split between the copies of a subtest" },
	{ "list-placement", list_placement, "--list-placement: each subtest and its placement" },
	{ "pass", pass, "exact lines and exit 0" },
	{ "fail", fail, "exit 98, both operands and file:line on stderr" },
	{ "skip", skip, "exit 77 and the formatted reason" },
	{ "crash", crash, "CRASH line, then death by the same signal" },
	{ "abort", abort_exit, "exit 112 at once; later subtests never start" },
	{ "invalid", invalid, "unknown subtest / option / argument: exit 79; --help: 0" },
	{ "filters", filters, "comma lists and globs; exit status over several subtests" },
	{ "children", children, "gc_expect_child_signal: pass, survived, hung" },
	{ "thread-failure", thread_failure, "a failure in a helper thread: FAIL line, exit 98" },
	{ "dynamic", dynamic, "dynamic lines, parent verdict, SUB@DYN and --dynamic-subtest" },
	{ "fixture", fixture, "after-each leak check fails; a skipping setup skips all" },
	{ "metrics-json", metrics_json, "the exact JSON lines appended to the metrics file" },
	{ "metrics-errors", metrics_errors, "unwritable file, bad name, NaN: the subtest fails" },
	{ "checks", checks, "failed checks: the body goes on, the subtest fails listing each" },
	{ "checks-then-leave", checks_then_leave, "checks before an assert, a skip, in a child" },
	{ "variants", variants, "GC_VARIANTS(_F), GC_PRODUCT_F: one named dynamic per case" },
	{ "devices-each", devices_each, "a dynamic per device, gpu<N> (or cpu<N>), its id first" },
	{ "devices-pairs", devices_pairs, "pairs by the rule given; a device's cases together" },
	{ "devices-runtime", devices_runtime, "ordinals through $GPUCONFORM_DEVICES, first n" },
	{ "skip-location", skip_location, "a skip's file:line on stderr, its reason unchanged" },
	{ 0 }
};

GC_MAIN(.name = "unit_core", .description = "lib/core through the selftest binaries",
	.subtests = subtests)
