// SPDX-License-Identifier: MIT
/*
 * Benchmark (not a test): wall time from posix_spawn to exit of a test
 * binary, N times, for one subtest run and for --list-subtests.
 *   bench_spawn BINARY SUBTEST [N]
 * Output goes to /dev/null so only the process's own cost is timed.
 */
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int time_one(char *const argv[], posix_spawn_file_actions_t *fa, double *ns)
{
	uint64_t t0 = gc_now_ns();
	pid_t pid;
	int status, r = posix_spawn(&pid, argv[0], fa, NULL, argv, environ);

	if (r)
		return -r;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	*ns = (double)(gc_now_ns() - t0);
	return WIFEXITED(status) ? 0 : -ECHILD;
}

static int series(const char *label, char *const argv[], size_t n,
		  posix_spawn_file_actions_t *fa)
{
	struct gc_samples s;
	double ns = 0;
	int r = 0;

	gc_samples_init(&s);
	for (size_t i = 0; i < n && !r; i++) {
		r = time_one(argv, fa, &ns);
		if (!r)
			r = gc_samples_add(&s, ns / 1e6);
	}
	if (!r)
		printf("%-28s n=%zu median=%.3f ms p99=%.3f ms min=%.3f ms\n", label, s.n,
		       gc_stat_median(s.v, s.n), gc_stat_percentile(s.v, s.n, 99),
		       gc_stat_min(s.v, s.n));
	else
		fprintf(stderr, "%s: %s\n", label, strerror(-r));
	gc_samples_free(&s);
	return r;
}

int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	size_t n = argc > 3 ? strtoul(argv[3], NULL, 10) : 1000;
	int r;

	if (argc < 3) {
		fprintf(stderr, "usage: %s BINARY SUBTEST [N]\n", argv[0]);
		return 2;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	r = series("--run-subtest", (char *[]){ argv[1], "--run-subtest", argv[2], NULL }, n, &fa);
	if (!r)
		r = series("--list-subtests", (char *[]){ argv[1], "--list-subtests", NULL }, n, &fa);
	posix_spawn_file_actions_destroy(&fa);
	return r ? 1 : 0;
}
