// SPDX-License-Identifier: MIT
/* The leak-checked fixture over a stack's probes. See leakcheck.h. */
#include "leakcheck.h"
#include "core.h"
#include "devfd.h"
#include "measure.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void gc_leak_add(struct gc_leak_reading *r, const struct gc_leak_probe *p, uint64_t value,
		 const char *fmt, ...)
{
	struct gc_leak_probe *to = &r->probe[r->n];

	if (r->n >= GC_LEAK_MAX_PROBES)
		return;
	*to = *p;
	GC_VFORMAT(to->name, sizeof(to->name), fmt);
	r->value[r->n++] = value;
}

bool gc_leak_probe_leaked(const struct gc_leak_probe *p, uint64_t before, uint64_t now)
{
	if (p->rule == GC_LEAK_GROWTH)
		return now > before + p->slack;
	return (before > now ? before - now : now - before) > p->slack;
}

static void say_plain(const struct gc_leak_probe *p, uint64_t before, uint64_t now, char *msg,
		      size_t len)
{
	snprintf(msg, len, "%s %" PRIu64 " -> %" PRIu64, p->name, before, now);
}

/* Appends `; what` (or `what` first) to msg at *used: msg keeps the text's first len - 1 bytes. */
static void append(char *msg, size_t len, size_t *used, const char *what)
{
	int n;

	if (*used + 1 >= len)
		return;
	n = snprintf(msg + *used, len - *used, "%s%s", *used ? "; " : "", what);
	if (n > 0)
		*used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
}

unsigned gc_leak_diff(const struct gc_leak_reading *before, const struct gc_leak_reading *now,
		      bool every_leak, char *msg, size_t len)
{
	char one[1024];
	unsigned bad = 0;
	size_t used = 0;

	if (len)
		msg[0] = '\0';
	for (unsigned i = 0; i < before->n && i < now->n; i++) {
		const struct gc_leak_probe *p = &now->probe[i];

		if (!gc_leak_probe_leaked(p, before->value[i], now->value[i]))
			continue;
		if (++bad > 1 && !every_leak)
			continue;
		(p->say ? p->say : say_plain)(p, before->value[i], now->value[i], one, sizeof(one));
		append(msg, len, &used, one);
	}
	return bad;
}

void gc_leak_say_free_mem(const struct gc_leak_probe *p, uint64_t before, uint64_t now, char *msg,
			   size_t len)
{
	snprintf(msg, len, "%s has %lld bytes less free memory than before the subtest (%zu -> "
		 "%zu; slack %zu)", p->name, (long long)before - (long long)now, (size_t)before,
		 (size_t)now, (size_t)p->slack);
}

void gc_leak_say_devfds(const struct gc_leak_probe *p, uint64_t before, uint64_t now, char *msg,
			 size_t len)
{
	char fds[512];

	gc_devfd_list(p->name, fds, sizeof(fds));
	snprintf(msg, len, "%d %s* fds open, %d before the subtest (now: %s)", (int)now, p->name,
		 (int)before, fds);
}

int gc_leak_settle(struct gc_leak_set *s, struct gc_leak_reading *now, char *msg, size_t len)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)s->settle_ms * 1000000u;

	for (;;) {
		now->n = 0;
		s->read(s, now, "leak check");
		if (!gc_leak_diff(&s->before, now, s->every_leak, msg, len))
			return 0;
		if (gc_now_ns() >= deadline)
			return -EAGAIN;
		usleep(s->poll_us);
	}
}

void gc_leak_snapshot(struct gc_leak_set *s)
{
	memset(&s->before, 0, sizeof(s->before));
	s->read(s, &s->before, "leak snapshot");
}

void gc_leak_check(struct gc_leak_set *s)
{
	struct gc_leak_reading now;
	char msg[4096];
	size_t len = s->msg_len ? s->msg_len : 1024;

	memset(&now, 0, sizeof(now));
	if (gc_leak_settle(s, &now, msg, len < sizeof(msg) ? len : sizeof(msg)))
		gc_fail("leak: %s%s", msg, s->tail ? s->tail : "");
}
