// SPDX-License-Identifier: MIT
/* Subtests that leave processes behind: the runner must find and end them. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void sleep_long(void)
{
	sleep(300);
	_exit(0);
}

/* A grandchild in its own session: out of the test's process group. */
static void escaped_child(void *fx)
{
	int fds[2];
	pid_t pid, grandchild = 0;

	(void)fx;
	gc_assert_syscall(pipe(fds));
	pid = fork();
	gc_assert_syscall(pid);
	if (pid == 0) {
		setsid();
		grandchild = fork();
		if (grandchild == 0)
			sleep_long();
		_exit(write(fds[1], &grandchild, sizeof(grandchild)) == sizeof(grandchild) ? 0 : 1);
	}
	gc_assert_syscall(waitpid(pid, NULL, 0));
	gc_assert_cmpint(read(fds[0], &grandchild, sizeof(grandchild)), ==, sizeof(grandchild));
	close(fds[0]);
	close(fds[1]);
	gc_info("escaped child pid: %d", (int)grandchild);
}

static void lingering_child(void *fx)
{
	pid_t pid;

	(void)fx;
	pid = fork();
	gc_assert_syscall(pid);
	if (pid == 0)
		sleep_long();
	gc_info("lingering child pid: %d", (int)pid);
}

static const struct gc_subtest subtests[] = {
	{ "escaped-child", escaped_child, "leaves a grandchild in a new session" },
	{ "lingering-child", lingering_child, "leaves a child in the process group" },
	{ 0 }
};

GC_MAIN(.name = "selftest_child", .subtests = subtests)
