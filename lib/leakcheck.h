// SPDX-License-Identifier: MIT
/*
 * The leak-checked fixture every stack uses: a set of probes (each a count
 * such as a device's free memory or the open fds on a device node, with the
 * change it tolerates and its own words for a leak), read before a subtest,
 * read again after it until the counts settle or the settle time is over,
 * and the subtest failed naming each probe that leaked. A stack supplies
 * only its probes: how to read them (in its own driver-call order, so one
 * read fills every probe) and how a leak of each reads.
 *
 *     struct gc_leak_set s = { .read = my_read, .ctx = my, .settle_ms = 0 };
 *     before_each():  gc_leak_snapshot(&s);
 *     after_each():   gc_leak_check(&s);
 */
#ifndef GC_LEAKCHECK_H
#define GC_LEAKCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_LEAK_MAX_PROBES 72 /* KFD: 64 nodes and its fd count; amdgpu: 16 devices x 2 heaps + 2 */

/* When a change is a leak. */
enum gc_leak_rule {
	GC_LEAK_EITHER_WAY, /* |now - before| > slack */
	GC_LEAK_GROWTH,     /* now > before + slack: a count that fell is never ours */
};

struct gc_leak_probe;
/* A leak of p, from before to now, in the stack's words, into msg. */
typedef void gc_leak_say_fn(const struct gc_leak_probe *p, uint64_t before, uint64_t now,
			    char *msg, size_t len);

struct gc_leak_probe {
	char name[80];          /* `gpu0`, `/dev/kfd`, `gpu1 (/dev/dri/renderD129): VRAM` */
	uint64_t slack;         /* the change tolerated */
	enum gc_leak_rule rule;
	gc_leak_say_fn *say;    /* NULL: `<name> <before> -> <now>` */
};

/* One reading of every probe, in the order the stack's read() filled them. */
struct gc_leak_reading {
	unsigned n;
	struct gc_leak_probe probe[GC_LEAK_MAX_PROBES];
	uint64_t value[GC_LEAK_MAX_PROBES];
};

struct gc_leak_set {
	/*
	 * Fills r (probes and values, appended with gc_leak_add to an empty
	 * reading: the caller empties it) or fails the subtest itself, in the
	 * stack's words: when is `leak snapshot` or `leak check` (compared
	 * with s->before).
	 */
	void (*read)(const struct gc_leak_set *s, struct gc_leak_reading *r, const char *when);
	const void *ctx;        /* the stack's, for read() */
	uint64_t slack;         /* for read(): the slack of the stack's counting probes */
	unsigned settle_ms;     /* how long a release may take to show; 0: one reading */
	unsigned poll_us;       /* between readings while settling */
	bool every_leak;        /* name every leak, `; ` between them (else the first one) */
	const char *tail;       /* after the leaks in the failure: `leak: <leaks><tail>` */
	size_t msg_len;         /* the failure's room for the leaks (0: 1024) */
	struct gc_leak_reading before;
};

/* Appends probe p, named by fmt, with its value to r. */
void gc_leak_add(struct gc_leak_reading *r, const struct gc_leak_probe *p, uint64_t value,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Pure: whether probe i of now leaked against before's (same probe order). */
bool gc_leak_probe_leaked(const struct gc_leak_probe *p, uint64_t before, uint64_t now);
/*
 * Pure: how many probes of now leaked against before, described in msg
 * (every one, `; ` between them, or only the first).
 */
unsigned gc_leak_diff(const struct gc_leak_reading *before, const struct gc_leak_reading *now,
		      bool every_leak, char *msg, size_t len);
/*
 * Reads s until nothing leaked against s->before (0) or settle_ms passed
 * (-EAGAIN, msg naming the leaks of the last reading).
 */
int gc_leak_settle(struct gc_leak_set *s, struct gc_leak_reading *now, char *msg, size_t len);

/*
 * Two stacks' words for a leak: `<name> has N bytes less free memory than
 * before the subtest (B -> A; slack S)` for a device's free memory, and
 * `N <name>* fds open, M before the subtest (now: <the fds>)` for the fds
 * open on a device node (name: its path prefix, listed when it leaked).
 */
gc_leak_say_fn gc_leak_say_free_mem, gc_leak_say_devfds;

void gc_leak_snapshot(struct gc_leak_set *s); /* before_each(): s->before */
void gc_leak_check(struct gc_leak_set *s);    /* after_each(): `leak: ...` fails the subtest */

#endif
