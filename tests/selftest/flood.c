// SPDX-License-Identifier: MIT
/* Subtests that write far more output than anyone reads. */
#include "core.h"

#include <string.h>
#include <unistd.h>

#define FLOOD_BYTES (64u << 20)

static void flood(int fd)
{
	char line[4096];
	size_t left = FLOOD_BYTES;

	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	while (left) {
		size_t n = left < sizeof(line) ? left : sizeof(line);
		ssize_t w = write(fd, line, n);

		gc_assert(w > 0);
		left -= (size_t)w;
	}
}

static void stdout_flood(void *fx)
{
	(void)fx;
	flood(STDOUT_FILENO);
}

static void stderr_flood(void *fx)
{
	(void)fx;
	flood(STDERR_FILENO);
}

static const struct gc_subtest subtests[] = {
	{ "stdout-flood", stdout_flood, "64 MiB to stdout, then success" },
	{ "stderr-flood", stderr_flood, "64 MiB to stderr, then success" },
	{ 0 }
};

GC_MAIN(.name = "selftest_flood", .subtests = subtests)
