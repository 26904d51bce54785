// SPDX-License-Identifier: MIT
/* Subtests that never finish: the runner's timeout must end them. */
#include "core.h"

#include <signal.h>
#include <unistd.h>

static void sleep_forever(void *fx)
{
	(void)fx;
	for (;;)
		pause();
}

static void ignore_sigterm(void *fx)
{
	(void)fx;
	signal(SIGTERM, SIG_IGN);
	for (;;)
		pause();
}

static const struct gc_subtest subtests[] = {
	{ "sleep-forever", sleep_forever, "sleeps until killed" },
	{ "ignore-sigterm", ignore_sigterm, "ignores SIGTERM: only SIGKILL ends it" },
	{ 0 }
};

GC_MAIN(.name = "selftest_hang", .subtests = subtests)
