// SPDX-License-Identifier: MIT
/*
 * exclusive-node, the case the session contract exists for: on AMD's GIM virtualisation
 * hosts the management node /dev/gim-smi0 is needed by other processes, so
 * a daemon must not hold it between requests. NOT RUN ON A GIM HOST (or any
 * AMD hardware).
 *
 * A forked child holds a session (two inits), then shuts down twice; after
 * each stage a second process (a child of that child) tries to open the
 * node, and the session's process counts its own fds on it. The results
 * come back through a shared page. Neither library's documentation names
 * the node: a session that holds no fd on it skips (the node is not that
 * library's). Asserted, from the shutdown documentation quoted in
 * smi_session.h: after the outermost shutdown the session's process holds
 * no fd on the node and a second process can open it. Whether the node
 * admits a second opener while the session holds it is the GIM driver's
 * business and is recorded.
 */
#include "smi_session.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devfd.h"

#define SESSION_TIMEOUT_MS 60000
#define PROBE_TIMEOUT_MS 5000

enum stage { HELD, INNER, OUTER, STAGES };
static const char *const stage_names[STAGES] = {
	"after two inits", "after the inner shutdown", "after the outermost shutdown"
};

struct probe {
	ss_status r;  /* the stage's last init or shutdown */
	int held;     /* fds the session's process holds on the node (or -errno) */
	int open_err; /* a second process's open(2) of the node: 0 or its errno */
};

struct shared {
	struct ss_fx *f;
	int stages; /* how many the session's process got through */
	struct probe p[STAGES];
};

static void probe_child(void *arg)
{
	int fd = open(SS_GIM_NODE, O_RDWR | O_NONBLOCK | O_CLOEXEC);

	(void)arg;
	_exit(fd < 0 ? errno : 0);
}

/* Another process opens the node: 0, or the errno that stopped it. */
static int probe(void)
{
	struct gc_child_status cs;
	int r = gc_fork_run(probe_child, NULL, PROBE_TIMEOUT_MS, &cs);

	if (r)
		return -r;
	if (cs.fate == GC_CHILD_TIMED_OUT)
		return ETIMEDOUT;
	return cs.fate == GC_CHILD_EXITED ? cs.code : ECHILD;
}

static void stage(struct shared *s, enum stage st, ss_status r)
{
	s->p[st].r = r;
	s->p[st].held = gc_devfd_count(SS_GIM_NODE);
	s->p[st].open_err = probe();
	s->stages = (int)st + 1;
}

/* The process holding the session: two inits, then two shutdowns, probed after each stage. */
static void session_child(void *arg)
{
	struct shared *s = arg;
	const struct ss_lib *l = &s->f->lib;
	ss_status r = l->ops->init(l->ctx);

	if (r == SS_SUCCESS && (r = l->ops->init(l->ctx)) != SS_SUCCESS)
		l->ops->shutdown(l->ctx); /* the first one's */
	stage(s, HELD, r);
	if (r != SS_SUCCESS)
		return;
	stage(s, INNER, l->ops->shutdown(l->ctx));
	stage(s, OUTER, l->ops->shutdown(l->ctx));
}

static void record(const struct ss_fx *f, const struct shared *s)
{
	char b[192];

	for (int i = 0; i < s->stages; i++)
		gc_info("%s: %s; the session's process holds %d fd(s) on " SS_GIM_NODE
			"; a second process's open: %s", stage_names[i],
			ss_rs(f, s->p[i].r, b, sizeof(b)), s->p[i].held,
			s->p[i].open_err ? strerror(s->p[i].open_err) : "opened");
}

static void verdict(const struct ss_fx *f, const struct shared *s,
		    const struct gc_child_status *cs)
{
	const struct probe *p = s->p;
	char b[192];

	gc_assert_f(cs->fate == GC_CHILD_EXITED, "the process holding the session %s after %d "
		    "of %d stages", ss_fate(cs, SESSION_TIMEOUT_MS, b, sizeof(b)), s->stages,
		    STAGES);
	gc_assert_cmpint(s->stages, >=, 1);
	if (p[HELD].r != SS_SUCCESS && f->why[0])
		gc_skip("%s in a child: %s, so no session holds the node (%s)", f->lib.init_call,
			ss_rs(f, p[HELD].r, b, sizeof(b)), f->why);
	ss_ok(f, f->lib.init_call, p[HELD].r);
	gc_require_f(p[HELD].held > 0, "a %s session holds no fd on " SS_GIM_NODE ": the node "
		     "is not this library's, nothing to release", f->lib.name);
	gc_assert_cmpint(s->stages, ==, STAGES);
	if (f->lib.refcounted) {
		ss_ok(f, f->lib.shutdown_call, p[INNER].r);
		ss_ok(f, f->lib.shutdown_call, p[OUTER].r);
	}
	gc_assert_f(p[OUTER].held == 0, "%d fd(s) on " SS_GIM_NODE " still open after the "
		    "outermost shutdown", p[OUTER].held);
	gc_assert_f(p[OUTER].open_err == 0, "after the outermost shutdown a second process "
		    "still cannot open " SS_GIM_NODE ": %s", strerror(p[OUTER].open_err));
}

void ss_test_exclusive_node(void *data)
{
	struct ss_fx *f = data;
	struct gc_child_status cs;
	struct shared *s, seen;
	int e;

	if (access(SS_GIM_NODE, F_OK) != 0)
		gc_skip("no " SS_GIM_NODE ": not an AMD GIM virtualisation host");
	e = probe();
	gc_require_f(e == 0, "a process cannot open " SS_GIM_NODE " before any session: %s",
		     strerror(e));
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	gc_assert_f(s != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(s, 0, sizeof(*s));
	s->f = f;
	e = gc_fork_run(session_child, s, SESSION_TIMEOUT_MS, &cs);
	seen = *s;
	munmap(s, sizeof(*s));
	gc_assert_ok(e);
	record(f, &seen);
	verdict(f, &seen, &cs);
}
