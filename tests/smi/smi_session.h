/* SPDX-License-Identifier: MIT */
/*
 * The management-session contract on AMD's management libraries, shared by
 * rsmi_session (rocm_smi) and amdsmi_session (amdsmi): a daemon opens a
 * session per request (init, find the device again by its id, query,
 * shutdown) from up to 256 threads while a watcher holds its own session,
 * and needs the count of inits and shutdowns kept, no deadlock, no answer
 * about the wrong device, the device nodes released at the outermost
 * shutdown, and a known cost per cycle. The subtests and their names are
 * nvml_session's.
 *
 * Each library file fills a struct ss_lib (its calls behind struct ss_ops,
 * the names of those calls for messages, and what its documentation
 * promises); the subtests here assert what the documentation promises and
 * record the rest with gc_info, so a library that promises less is held to
 * less and the log says what it did.
 *
 * Device nodes: /dev/kfd, /dev/dri/ and /dev/gim-smi* (ss_devfds()).
 * Neither rocm_smi.h nor amdsmi.h says which nodes a session opens, so the
 * tests record what is open inside a session and assert only that the
 * count is back to what it was before the first init once the outermost
 * shutdown returned (rocm_smi.h, rsmi_shut_down: "Do any necessary clean
 * up." [src ROCm/rocm_smi_lib include/rocm_smi/rocm_smi.h @ rocm-5.2.3];
 * amdsmi.h, amdsmi_shut_down: "This function shuts down the library and
 * internal data structures and performs any necessary clean ups." [src
 * ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @ a881068735de]).
 *
 * NOT RUN ON AMD HARDWARE: no AMD GPU was available when this was written.
 */
#ifndef GPUCONFORM_SMI_SESSION_H
#define GPUCONFORM_SMI_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "contract/session.h"
#include "core.h"

typedef uint32_t ss_status; /* rsmi_status_t, amdsmi_status_t: 0 is success in both */
#define SS_SUCCESS 0u

#define SS_MAX_DEV 16
#define SS_ID_LEN 64
#define SS_STR_LEN 256
#define SS_GIM_NODE "/dev/gim-smi0"

/* What one request asks about a device; the name, serial, bus and memory answers are compared. */
enum ss_q { SS_Q_NAME, SS_Q_SERIAL, SS_Q_BUS, SS_Q_MEM, SS_Q_TEMP, SS_Q_BUSY, SS_NQ };

struct ss_answer {
	ss_status st[SS_NQ]; /* each query's status */
	char name[SS_STR_LEN], serial[SS_STR_LEN], bus[48];
	uint64_t mem_total;
};

/* A device as the reference (persistent) session saw it. */
struct ss_dev {
	char id[SS_ID_LEN]; /* what a request finds it by: a UUID, a unique id */
	struct ss_answer a;
};

/* A library's calls; ctx is the library file's own state. Handles are opaque. */
struct ss_ops {
	ss_status (*init)(void *ctx); /* the session a daemon opens (default flags) */
	ss_status (*shutdown)(void *ctx);
	ss_status (*count)(void *ctx, unsigned *n); /* GPUs in this session */
	ss_status (*handle)(void *ctx, unsigned index, uintptr_t *h);
	ss_status (*resolve)(void *ctx, const char *id, uintptr_t *h);
	ss_status (*id_of)(void *ctx, uintptr_t h, char *id, size_t len);
	void (*query)(void *ctx, uintptr_t h, struct ss_answer *a);
	const char *(*strerror)(void *ctx, ss_status r, char *buf, size_t len);
	/* optional, inside the setup's session: 0, or why the library cannot be tested */
	int (*usable)(void *ctx, char *why, size_t len);
};

struct ss_lib {
	const char *name; /* `rocm_smi` */
	const char *init_call, *shutdown_call, *count_call, *handle_call, *resolve_call,
		*id_call;
	const char *query_call[SS_NQ];
	/*
	 * The library promises a reference count of inits and shutdowns, made
	 * by any thread (its documentation, or the source of the version that
	 * runs): then every init, shutdown and query inside a session must
	 * succeed as the reference session's did. Without the promise those
	 * statuses are recorded, not asserted. count_why says which promise
	 * and where it comes from (a version, a source); every subtest prints it.
	 */
	bool refcounted;
	const char *count_why;
	const struct ss_ops *ops;
	void *ctx;
};

struct ss_fx {
	struct ss_lib lib;
	unsigned seen; /* devices the reference session saw */
	unsigned n;    /* of which the first n (at most SS_MAX_DEV) are in dev[] */
	struct ss_dev dev[SS_MAX_DEV];
	int fds0;       /* device node fds before any session */
	char why[512];  /* set when only exclusive-node can run (a GIM host without amdgpu) */
	unsigned stuck; /* threads a failed subtest left running: never joined, never freed */
};

/* ------------------------------------------------------------ fixture */

/*
 * The reference session, in the library file's setup once lib is filled:
 * init, count, every device's answers, shutdown. No device at all: skip
 * naming the init result and what /sys/class/drm holds; amdgpu drives a
 * device the library cannot initialise or see: fail.
 */
void ss_setup(struct ss_fx *f);
void ss_before_each(void *data); /* skips once threads were left running */
void ss_after_each(void *data);  /* device node fds back to where they were */
bool ss_may_release(const struct ss_fx *f); /* teardown may close the library */

/* ------------------------------------------------------------ helpers */

void ss_need_devices(const struct ss_fx *f);
void ss_need_ids(const struct ss_fx *f); /* ... and ids that tell the devices apart */
/*
 * The session contract's table of the library's init and shutdown
 * (contract/session.h), made when used: lib.refcounted may be set by the
 * setup's session.
 */
struct gc_session ss_session(struct ss_fx *f);
/* Shut a session down: the status asserted where lib.refcounted, else recorded when not success. */
void ss_shut(struct ss_fx *f, const char *when);
/* A session is open: the library sees as many devices as the reference session saw. */
void ss_expect_count(struct ss_fx *f, const char *when);
/* The same, recorded with the open device nodes. */
void ss_record_count(struct ss_fx *f, const char *when);
const char *ss_rs(const struct ss_fx *f, ss_status r, char *buf, size_t len);
int ss_devfds(void);
void ss_devfds_list(char *buf, size_t len);
/* `exited with status 2`, `killed by signal 11 (...)`, `still running after 20 s (killed)`. */
const char *ss_fate(const struct gc_child_status *cs, unsigned timeout_ms, char *buf, size_t len);
/* In a child (gc_fork_run), one shutdown more than there were inits, its status printed. */
void ss_extra_shutdown(struct ss_fx *f, const char *after);

#define ss_ok(f, what, call)                                                             \
	do {                                                                             \
		ss_status r_ = (call);                                                   \
		char b_[192];                                                            \
		gc_assert_f(r_ == SS_SUCCESS, "%s: %s", what, ss_rs(f, r_, b_, sizeof(b_))); \
	} while (0)

/*
 * An id of the libraries' own form that names no device: device 0's with
 * every hex digit after the first ':' (or every one, without a ':')
 * replaced by 15 minus it, so that it differs in each. Skips in the
 * unlikely case that it is another device's.
 */
void ss_unknown_id(const struct ss_fx *f, char *id, size_t len);
/* The first query whose status or (compared) value differs from ref; -1 when none. */
int ss_diff(const struct ss_answer *ref, const struct ss_answer *a, bool *wrong);
/* `rsmi_dev_name_get: RSMI_STATUS_BUSY, the reference RSMI_STATUS_SUCCESS` or the two values. */
void ss_diff_text(const struct ss_fx *f, const struct ss_dev *d, const struct ss_answer *a, int q,
		  char *buf, size_t len);

/* ------------------------------------------------------------ subtests */

void ss_test_refcount(void *data);
void ss_test_concurrent(void *data);
void ss_test_unpaired(void *data);
void ss_test_handles(void *data);
void ss_test_exclusive_node(void *data);
void ss_test_cost(void *data);

/*
 * The subtest table: nvml_session's names, in its order; unknown-uuid and
 * init-flags are each library's own.
 */
#define SS_SUBTESTS(unknown_uuid, unknown_desc, init_flags, flags_desc)                       \
	{ "refcount", ss_test_refcount, "k inits and k shutdowns: the inits work, the nodes "   \
	  "are released after the k-th; in between, what the docs promise" },                  \
	{ "concurrent-sessions", ss_test_concurrent, "256 threads init -> request by id -> "    \
	  "shutdown beside a watcher: no deadlock, no answer unlike the persistent session's" }, \
	{ "unpaired-init", ss_test_unpaired, "64 concurrent inits, then 64 shutdowns from "     \
	  "other threads: no deadlock, the nodes are released, a new session works" },          \
	{ "handles-across-cycles", ss_test_handles, "a handle of an ended session never names " \
	  "another device; the id finds the same device again" },                               \
	{ "unknown-uuid", unknown_uuid, unknown_desc },                                          \
	{ "init-flags", init_flags, flags_desc },                                                \
	{ "exclusive-node", ss_test_exclusive_node, SS_GIM_NODE " released after the "          \
	  "outermost shutdown (GIM hosts only)" },                                               \
	{ "cost", ss_test_cost, "init, shutdown, request, cold and warm; lazy over persistent" }, \
	{ 0 }

/* The subtests whose length is the run's level (lib/soak.h): both binaries' .soaks. */
#define SS_SOAKS { "concurrent-sessions", NULL }

#endif
