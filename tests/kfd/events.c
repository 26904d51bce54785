// SPDX-License-Identifier: MIT
/*
 * kfd_events: KFD signal events on the raw UAPI (AMDKFD_IOC_CREATE_EVENT,
 * DESTROY_EVENT, SET_EVENT, RESET_EVENT, WAIT_EVENTS).
 *
 * UNVERIFIED ON HARDWARE: written and built against Debian 12's
 * <linux/kfd_ioctl.h> (UAPI 1.11) with no AMD GPU and no /dev/kfd; every
 * expectation below comes from reading the kernel source, none was run.
 *
 * Why: KFD allows KFD_SIGNAL_EVENT_LIMIT signal events per process;
 * a profiler that pooled HSA completion signals hit it. <linux/kfd_ioctl.h>
 * defines the limit and the wait results but names no error code, so each
 * errno here is taken from drivers/gpu/drm/amd/amdkfd/kfd_events.c and
 * kfd_chardev.c (torvalds/linux, the CRIU era; older kernels may differ)
 * [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_events.c @ 026e14a276c6]
 * [src torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c @ 00af6729b52e]:
 *  - kfd_event_init_process(): `p->signal_event_count = 1;` and event ID 0 is
 *    allocated for the process itself ("Allocate event ID 0. It is used for a
 *    fast path to ignore bogus events [...]"): one slot of the page is never
 *    the user's.
 *  - create_signal_event(): `if (p->signal_mapped_size &&
 *    p->signal_event_count == p->signal_mapped_size / 8)` ... `return -ENOSPC;`:
 *    the limit is enforced against the MAPPED size of the signal page, not
 *    against KFD_SIGNAL_EVENT_LIMIT directly.
 *  - the event page need not be allocated by user space first: with
 *    event_page_offset 0 the first signal event makes the kernel allocate
 *    its own page (allocate_event_notification_slot -> allocate_signal_page,
 *    KFD_SIGNAL_EVENT_LIMIT * 8 bytes) and sets `p->signal_mapped_size =
 *    256*8;` (its comment: `Oldest user mode expects 256 event slots`): 255 events. A
 *    non-zero event_page_offset instead names a user GTT BO (kfd_chardev.c,
 *    "For dGPUs the event page is allocated in user mode.", kfd_kmap_event_page;
 *    what libhsakmt does on dGPUs); not used here.
 *  - kfd_event_mmap(): mmap of /dev/kfd at the returned event_page_offset
 *    (KFD_MMAP_TYPE_EVENTS) sets `p->signal_mapped_size = vma->vm_end -
 *    vma->vm_start;`, after refusing (EINVAL) a vma whose get_order exceeds
 *    that of KFD_SIGNAL_EVENT_LIMIT * 8. Mapping the 32 KiB page therefore
 *    raises the limit to 32768 / 8 - 1 = 4095 user events (= the limit minus
 *    the reserved ID 0). PAGE-SIZE DEPENDENT: the vma is whole pages, so with
 *    pages larger than 32 KiB the mapped size, and the limit, is one page / 8
 *    - 1 (8191 with 64 KiB pages). We expect mapped_bytes / 8 - 1.
 *  - kfd_event_create(): a signal event gets `*event_page_offset =
 *    KFD_MMAP_TYPE_EVENTS;`, `*event_slot_index = ev->event_id;` and
 *    `*event_trigger_data = ev->event_id;`; its slot is set to
 *    UNSIGNALED_EVENT_SLOT ((uint64_t)-1, kfd_events.h).
 *  - IDs come from idr_alloc(&p->event_idr, ev, 0, signal_mapped_size / 8):
 *    with every other slot taken, the one freed is the only one left.
 *  - destroy_event() decrements signal_event_count and removes the ID;
 *    kfd_event_destroy / kfd_set_event / kfd_reset_event of an unknown ID:
 *    -EINVAL; kfd_wait_on_events with an unknown ID: init_event_waiter
 *    -EINVAL, returned as is.
 *  - set_event(): with no waiter `ev->signaled = !ev->auto_reset ||
 *    !waitqueue_active(&ev->wq);` = true; init_event_waiter():
 *    `ev->signaled = ev->signaled && !ev->auto_reset;`: a wait consumes an
 *    auto-reset event and leaves a manual one signaled; reset_event() clears.
 *  - kfd_wait_on_events(): returns 0 with wait_result COMPLETE or TIMEOUT
 *    (timeout 0 is KFD_EVENT_TIMEOUT_IMMEDIATE: one check, no sleep).
 */
/*
 * Two kinds of kernel, both written here, the one found printed by every
 * subtest that creates an event. The amd-gfx series of June 2026
 * [mail <20260611200746.320513-1-Yongqiang.Sun@amd.com>], whose patch 2/2 is
 * titled `remove dead kernel-allocated signal page code` (in the amdgpu pull
 * for drm-next 7.3, tag amd-drm-next-7.3-2026-07-02; in no release read),
 * drops the kernel's own page: without a user-mapped page the first
 * CREATE_EVENT then fails with ENOMEM. So the first CREATE_EVENT of each
 * child, made without a page, decides the side:
 *  - it succeeds: `this kernel allocates the event page itself`; the
 *    promises above hold (255 events unmapped, mapped_bytes / 8 - 1 with the
 *    page mmapped at the returned offset).
 *  - it fails with ENOMEM: `this kernel has no kernel-allocated event page`.
 *    limit-unmapped skips saying so (its promise is the kernel page's);
 *    limit-mapped and destroy-frees-slot map the page first as libhsakmt
 *    does on dGPUs: a GTT BO of KFD_SIGNAL_EVENT_LIMIT * 8 bytes, its handle
 *    given as event_page_offset of the first CREATE_EVENT (kfd_kmap_event_page
 *    sets signal_mapped_size to the BO's size), read through the BO's CPU
 *    mapping; the wait subtests set the same page up before their events.
 * An ENOMEM that is a real shortage on a kernel with its own page would be
 * taken for the second side; the output names the side so a reader can tell.
 *
 * KFD state is per process (per mm), so every subtest runs in a forked child
 * that opens /dev/kfd itself: a fresh kfd_process, event ID 0 only, no page.
 * The child reports pass (0), skip (77, its reason printed) or failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "gc_kfd.h"
#include "measure.h"

#define CHILD_TIMEOUT_MS 120000u
#define KERNEL_PAGE_SLOTS 256u  /* allocate_event_notification_slot: 256*8 bytes mapped */
#define UNSIGNALED (~(uint64_t)0) /* kfd_events.h UNSIGNALED_EVENT_SLOT */
#define WAKE_DELAY_MS 50
#define WAKE_TIMEOUT_MS 10000u
#define TIMEOUT_MS 20u

/* ------------------------------------------------------------ ioctls */

static int ev_create(const struct gc_kfd *kfd, bool auto_reset,
		     struct kfd_ioctl_create_event_args *a)
{
	memset(a, 0, sizeof(*a));
	a->event_type = KFD_IOC_EVENT_SIGNAL;
	a->auto_reset = auto_reset;
	return gc_kfd_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, a);
}

static uint32_t ev_new(const struct gc_kfd *kfd, bool auto_reset)
{
	struct kfd_ioctl_create_event_args a;

	gc_assert_ok(ev_create(kfd, auto_reset, &a));
	return a.event_id;
}

static int ev_destroy(const struct gc_kfd *kfd, uint32_t id)
{
	struct kfd_ioctl_destroy_event_args a = { .event_id = id };

	return gc_kfd_ioctl(kfd, AMDKFD_IOC_DESTROY_EVENT, &a);
}

static int ev_set(const struct gc_kfd *kfd, uint32_t id)
{
	struct kfd_ioctl_set_event_args a = { .event_id = id };

	return gc_kfd_ioctl(kfd, AMDKFD_IOC_SET_EVENT, &a);
}

static int ev_reset(const struct gc_kfd *kfd, uint32_t id)
{
	struct kfd_ioctl_reset_event_args a = { .event_id = id };

	return gc_kfd_ioctl(kfd, AMDKFD_IOC_RESET_EVENT, &a);
}

/* WAIT_EVENTS on ids[0..n); *result gets wait_result. 0 or -errno. */
static int ev_wait(const struct gc_kfd *kfd, const uint32_t *ids, uint32_t n, bool all,
		   uint32_t timeout_ms, uint32_t *result)
{
	struct kfd_event_data data[4];
	struct kfd_ioctl_wait_events_args a = {
		.events_ptr = (uint64_t)(uintptr_t)data,
		.num_events = n, .wait_for_all = all, .timeout = timeout_ms,
	};
	int err;

	gc_assert(n <= 4);
	memset(data, 0, sizeof(data));
	for (uint32_t i = 0; i < n; i++)
		data[i].event_id = ids[i];
	err = gc_kfd_ioctl(kfd, AMDKFD_IOC_WAIT_EVENTS, &a);
	*result = a.wait_result;
	return err;
}

static const char *wait_name(uint32_t r)
{
	switch (r) {
	case KFD_IOC_WAIT_RESULT_COMPLETE: return "COMPLETE";
	case KFD_IOC_WAIT_RESULT_TIMEOUT: return "TIMEOUT";
	case KFD_IOC_WAIT_RESULT_FAIL: return "FAIL";
	default: return "unknown";
	}
}

/* One immediate wait must give 0 and wait_result want. */
static void expect_wait(const struct gc_kfd *kfd, const uint32_t *ids, uint32_t n, bool all,
			uint32_t want, const char *when)
{
	uint32_t got = ~0u;

	gc_assert_ok(ev_wait(kfd, ids, n, all, 0, &got));
	gc_assert_f(got == want, "%s: wait_result %u (%s), expected %s", when, got,
		    wait_name(got), wait_name(want));
}

/* ----------------------------------------------------- child plumbing */

/* Run fn in a fresh process (its own kfd_process); its skip skips, anything else fails. */
static void run_fresh(void (*fn)(void *))
{
	struct gc_child_status st;
	int r = gc_fork_run(fn, NULL, CHILD_TIMEOUT_MS, &st);

	if (r)
		gc_fail("fork: %s", strerror(-r));
	if (st.fate == GC_CHILD_EXITED && st.code == 0)
		return;
	if (st.fate == GC_CHILD_EXITED && st.code == GC_EXIT_SKIP)
		gc_skip("the child process skipped (its reason is above)");
	if (st.fate == GC_CHILD_EXITED)
		gc_fail("child exited with status %d (its failure is above)", st.code);
	if (st.fate == GC_CHILD_SIGNALED)
		gc_fail("child died of signal %d (%s)", st.code, strsignal(st.code));
	gc_fail("child still running after %u ms: killed (a wait that never returned?)",
		CHILD_TIMEOUT_MS);
}

/* ------------------------------------------------------------ limits */

struct fill {
	uint32_t *ids;
	unsigned n;
	uint8_t *seen; /* one byte per possible ID */
	unsigned max_id;
};

/* Creates signal events until one fails; returns that error (0 never: cap reached). */
static int fill_events(const struct gc_kfd *kfd, struct fill *f, unsigned cap)
{
	struct kfd_ioctl_create_event_args a;
	int err;

	while (f->n < cap) {
		err = ev_create(kfd, false, &a);
		if (err)
			return err;
		gc_assert_f(a.event_id > 0 && a.event_id < f->max_id,
			    "event %u: id %u outside [1, %u)", f->n, a.event_id, f->max_id);
		gc_assert_f(!f->seen[a.event_id], "event id %u handed out twice", a.event_id);
		gc_assert_eq_uint(a.event_slot_index, a.event_id);
		gc_assert_eq_uint(a.event_trigger_data, a.event_id);
		gc_assert_f(a.event_page_offset != 0, "signal event %u: event_page_offset 0",
			    a.event_id);
		f->seen[a.event_id] = 1;
		f->ids[f->n++] = a.event_id;
	}
	return 0;
}

/* IDs live in [1, slots): slot 0 is the process's own. */
static void fill_init(struct fill *f, unsigned slots)
{
	unsigned max_id = slots;

	f->n = 0;
	f->max_id = max_id;
	f->ids = calloc(max_id, sizeof(*f->ids));
	f->seen = calloc(max_id, 1);
	gc_assert_f(f->ids && f->seen, "calloc(%u) failed", max_id);
}

/* Fill to the limit and one past: exactly limit events, then ENOSPC. */
static void fill_to_limit(const struct gc_kfd *kfd, struct fill *f, unsigned limit)
{
	int err = fill_events(kfd, f, limit + 1);

	gc_assert_f(err != 0, "%u signal events created, the limit is %u", f->n, limit);
	gc_assert_f(f->n == limit, "creation stopped after %u events with %s, expected %u",
		    f->n, strerror(-err), limit);
	gc_assert_errno(err, ENOSPC);
}

static size_t event_map_bytes(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = (size_t)KFD_SIGNAL_EVENT_LIMIT * 8;

	return (want + page - 1) / page * page;
}

/* ------------------------------------------------------ the two sides */

#define NO_KERNEL_PAGE "this kernel has no kernel-allocated event page"
#define USER_PAGE_ALIGN (2 * MiB)
#define USER_PAGE_FLAGS (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE)

/*
 * The first CREATE_EVENT of the process, without a user page: true and the
 * event in *a where the kernel allocated its own page, false where it gave
 * ENOMEM (no kernel page); any other error fails. The side found is printed.
 */
static bool kernel_page(const struct gc_kfd *kfd, struct kfd_ioctl_create_event_args *a)
{
	int err = ev_create(kfd, false, a);

	if (err == -ENOMEM) {
		gc_info("CREATE_EVENT without a user-mapped event page: ENOMEM: " NO_KERNEL_PAGE);
		return false;
	}
	gc_assert_f(err == 0, "the first CREATE_EVENT, without a user-mapped event page: %s",
		    strerror(-err));
	gc_info("CREATE_EVENT without a user-mapped event page succeeded: this kernel "
		"allocates the event page itself");
	return true;
}

/*
 * The event page as libhsakmt makes it on dGPUs: a GTT BO of len bytes on
 * the first GPU, CPU-mapped through its render node, then the first
 * CREATE_EVENT with its handle as event_page_offset (that event in *a).
 * Returns the CPU view of the slots. The child's exit frees the BO.
 */
static volatile uint64_t *user_page(struct gc_kfd *kfd, size_t len,
				    struct kfd_ioctl_create_event_args *a)
{
	struct gc_kfd_gpu *g;
	uint64_t va = 0, handle = 0, mmap_offset = 0;
	int err;

	gc_kfd_require_vms(kfd);
	g = &kfd->gpus[0];
	gc_assert_ok(gc_kfd_va_reserve(kfd, len, USER_PAGE_ALIGN, &va));
	gc_assert_ok(gc_kfd_alloc(kfd, g->node.gpu_id, len, va, USER_PAGE_FLAGS, &handle,
				  &mmap_offset));
	gc_assert_ok(gc_kfd_cpu_map(g, va, len, mmap_offset, PROT_READ | PROT_WRITE));
	memset(a, 0, sizeof(*a));
	a->event_type = KFD_IOC_EVENT_SIGNAL;
	a->event_page_offset = handle;
	err = gc_kfd_ioctl(kfd, AMDKFD_IOC_CREATE_EVENT, a);
	gc_assert_f(err == 0, "CREATE_EVENT with a user event page (GTT BO of %zu bytes, handle "
		    "0x%" PRIx64 "): %s", len, handle, strerror(-err));
	gc_info("event page: a user GTT BO of %zu bytes on gpu_id %u", len, g->node.gpu_id);
	return (volatile uint64_t *)(uintptr_t)va;
}

/*
 * The first event and the page mapped: on a kernel with its own page, that
 * page mmapped from /dev/kfd at the offset the event returned; without one,
 * a user page (user_page()).
 */
static volatile uint64_t *map_event_page(struct gc_kfd *kfd, struct fill *f, size_t len)
{
	struct kfd_ioctl_create_event_args a;
	volatile uint64_t *slots;
	void *p;

	if (kernel_page(kfd, &a)) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, kfd->fd,
			 (off_t)a.event_page_offset);
		gc_assert_f(p != MAP_FAILED, "mmap(/dev/kfd, %zu, offset 0x%" PRIx64 "): %s",
			    len, (uint64_t)a.event_page_offset, strerror(errno));
		slots = p;
	} else {
		slots = user_page(kfd, len, &a);
	}
	gc_assert_f(a.event_id > 0 && a.event_id < f->max_id, "the first event: id %u outside "
		    "[1, %u)", a.event_id, f->max_id);
	f->ids[f->n++] = a.event_id;
	f->seen[a.event_id] = 1;
	return slots;
}

/* /dev/kfd with an event page, whichever side: for the subtests that create events to wait. */
static struct gc_kfd *kfd_with_page(void)
{
	struct gc_kfd *kfd = gc_kfd_require();
	struct kfd_ioctl_create_event_args a;

	if (!kernel_page(kfd, &a))
		user_page(kfd, event_map_bytes(), &a);
	gc_assert_ok(ev_destroy(kfd, a.event_id));
	return kfd;
}

/*
 * Contract: with the signal page mapped (mapped_bytes), exactly
 * mapped_bytes / 8 - 1 signal events can exist (4095 = KFD_SIGNAL_EVENT_LIMIT
 * - 1 with 4 KiB pages); the next CREATE_EVENT fails with ENOSPC; every
 * created event's slot reads UNSIGNALED_EVENT_SLOT.
 */
static void limit_mapped_child(void *unused)
{
	struct gc_kfd *kfd = gc_kfd_require();
	size_t len = event_map_bytes();
	unsigned limit = (unsigned)(len / 8) - 1;
	volatile uint64_t *slots;
	struct fill f;

	(void)unused;
	fill_init(&f, limit + 1);
	slots = map_event_page(kfd, &f, len);
	gc_info("page size %ld: event page mapped %zu bytes, expecting %u signal events",
		sysconf(_SC_PAGESIZE), len, limit);
	fill_to_limit(kfd, &f, limit);
	if (len == (size_t)KFD_SIGNAL_EVENT_LIMIT * 8)
		gc_assert_eq_uint(f.n, KFD_SIGNAL_EVENT_LIMIT - 1);
	for (unsigned i = 0; i < f.n; i++)
		gc_assert_f(slots[f.ids[i]] == UNSIGNALED,
			    "event %u: slot 0x%" PRIx64 ", expected unsignaled", f.ids[i],
			    (uint64_t)slots[f.ids[i]]);
}

static void test_limit_mapped(void *fx)
{
	(void)fx;
	run_fresh(limit_mapped_child);
}

/*
 * Contract: without the event page mapped, the kernel's own page counts 256
 * slots: 255 signal events, then ENOSPC (the event page need not be
 * allocated first; the limit then is 256 slots, not KFD_SIGNAL_EVENT_LIMIT).
 * A kernel with no page of its own has no such limit to check: skip, saying
 * so (its first CREATE_EVENT gave ENOMEM).
 */
static void limit_unmapped_child(void *unused)
{
	struct gc_kfd *kfd = gc_kfd_require();
	struct kfd_ioctl_create_event_args a;
	struct fill f;

	(void)unused;
	if (!kernel_page(kfd, &a))
		gc_skip(NO_KERNEL_PAGE " (the first CREATE_EVENT without a user-mapped page "
			"gave ENOMEM): no unmapped limit to check");
	fill_init(&f, KERNEL_PAGE_SLOTS);
	gc_assert_f(a.event_id > 0 && a.event_id < f.max_id, "the first event: id %u outside "
		    "[1, %u)", a.event_id, f.max_id);
	f.seen[a.event_id] = 1;
	f.ids[f.n++] = a.event_id;
	fill_to_limit(kfd, &f, KERNEL_PAGE_SLOTS - 1);
}

static void test_limit_unmapped(void *fx)
{
	(void)fx;
	run_fresh(limit_unmapped_child);
}

/*
 * Contract: at the limit, destroying one signal event frees one slot: the
 * next create succeeds with exactly the freed ID (the only one left in the
 * IDR range), and the one after fails with ENOSPC again. Destroying the same
 * ID twice: EINVAL the second time.
 */
static void destroy_frees_child(void *unused)
{
	struct gc_kfd *kfd = gc_kfd_require();
	size_t len = event_map_bytes();
	unsigned limit = (unsigned)(len / 8) - 1;
	struct kfd_ioctl_create_event_args a;
	uint32_t victim;
	struct fill f;

	(void)unused;
	fill_init(&f, limit + 1);
	map_event_page(kfd, &f, len);
	fill_to_limit(kfd, &f, limit);
	victim = f.ids[f.n / 2];
	gc_assert_ok(ev_destroy(kfd, victim));
	gc_assert_errno(ev_destroy(kfd, victim), EINVAL);
	gc_assert_ok(ev_create(kfd, false, &a));
	gc_assert_eq_uint(a.event_id, victim);
	gc_assert_errno(ev_create(kfd, false, &a), ENOSPC);
}

static void test_destroy_frees_slot(void *fx)
{
	(void)fx;
	run_fresh(destroy_frees_child);
}

/* ------------------------------------------------------------- waits */

/*
 * Contract: an unsignaled event waited with timeout 0 (immediate) and with
 * TIMEOUT_MS returns 0 and wait_result TIMEOUT; the elapsed time is a metric.
 */
static void wait_timeout_child(void *unused)
{
	struct gc_kfd *kfd = kfd_with_page();
	uint32_t id = ev_new(kfd, false), got = ~0u;
	double us;
	uint64_t t0;

	(void)unused;
	expect_wait(kfd, &id, 1, false, KFD_IOC_WAIT_RESULT_TIMEOUT, "immediate wait");
	t0 = gc_now_ns();
	gc_assert_ok(ev_wait(kfd, &id, 1, false, TIMEOUT_MS, &got));
	us = (double)(gc_now_ns() - t0) / 1e3;
	gc_assert_f(got == KFD_IOC_WAIT_RESULT_TIMEOUT, "%u ms wait: wait_result %s",
		    TIMEOUT_MS, wait_name(got));
	gc_metric("wait-timeout-20ms", "us", GC_LOWER_IS_BETTER, &us, 1);
	gc_assert_ok(ev_destroy(kfd, id));
}

static void test_wait_timeout(void *fx)
{
	(void)fx;
	run_fresh(wait_timeout_child);
}

/*
 * Contract: SET then wait: COMPLETE. A manual-reset event stays signaled
 * across waits until RESET_EVENT; an auto-reset event is consumed by the
 * first wait. SET / RESET / DESTROY / WAIT of an ID never created: EINVAL.
 */
static void set_reset_child(void *unused)
{
	struct gc_kfd *kfd = kfd_with_page();
	uint32_t manual = ev_new(kfd, false), aut = ev_new(kfd, true), got;
	uint32_t bogus = KFD_SIGNAL_EVENT_LIMIT - 1; /* never created in this process */

	(void)unused;
	gc_assert_ok(ev_set(kfd, manual));
	expect_wait(kfd, &manual, 1, false, KFD_IOC_WAIT_RESULT_COMPLETE, "manual, set");
	expect_wait(kfd, &manual, 1, false, KFD_IOC_WAIT_RESULT_COMPLETE, "manual, waited once");
	gc_assert_ok(ev_reset(kfd, manual));
	expect_wait(kfd, &manual, 1, false, KFD_IOC_WAIT_RESULT_TIMEOUT, "manual, reset");
	gc_assert_ok(ev_set(kfd, aut));
	expect_wait(kfd, &aut, 1, false, KFD_IOC_WAIT_RESULT_COMPLETE, "auto-reset, set");
	expect_wait(kfd, &aut, 1, false, KFD_IOC_WAIT_RESULT_TIMEOUT, "auto-reset, consumed");
	gc_assert_errno(ev_set(kfd, bogus), EINVAL);
	gc_assert_errno(ev_reset(kfd, bogus), EINVAL);
	gc_assert_errno(ev_destroy(kfd, bogus), EINVAL);
	gc_assert_errno(ev_wait(kfd, &bogus, 1, false, 0, &got), EINVAL);
	gc_assert_ok(ev_destroy(kfd, manual));
	gc_assert_ok(ev_destroy(kfd, aut));
}

static void test_set_reset(void *fx)
{
	(void)fx;
	run_fresh(set_reset_child);
}

/*
 * Contract: wait_for_all = 0 completes when one event is signaled;
 * wait_for_all = 1 only when every event is.
 */
static void wait_all_any_child(void *unused)
{
	struct gc_kfd *kfd = kfd_with_page();
	uint32_t ids[2] = { ev_new(kfd, false), ev_new(kfd, false) };

	(void)unused;
	gc_assert_ok(ev_set(kfd, ids[1]));
	expect_wait(kfd, ids, 2, false, KFD_IOC_WAIT_RESULT_COMPLETE, "any, one set");
	expect_wait(kfd, ids, 2, true, KFD_IOC_WAIT_RESULT_TIMEOUT, "all, one set");
	gc_assert_ok(ev_set(kfd, ids[0]));
	expect_wait(kfd, ids, 2, true, KFD_IOC_WAIT_RESULT_COMPLETE, "all, both set");
}

static void test_wait_all_any(void *fx)
{
	(void)fx;
	run_fresh(wait_all_any_child);
}

struct setter {
	const struct gc_kfd *kfd;
	uint32_t id;
	int err;
};

static void *set_later(void *arg)
{
	struct setter *s = arg;
	struct timespec d = { 0, WAKE_DELAY_MS * 1000000L };

	nanosleep(&d, NULL);
	s->err = ev_set(s->kfd, s->id);
	return NULL;
}

/*
 * Contract: a blocked WAIT_EVENTS is woken by SET_EVENT from another thread
 * and returns COMPLETE (not TIMEOUT: the timeout is 200 x the set delay).
 */
static void wakeup_child(void *unused)
{
	struct gc_kfd *kfd = kfd_with_page();
	struct setter s = { kfd, ev_new(kfd, true), 0 };
	uint32_t got = ~0u;
	pthread_t t;

	(void)unused;
	gc_assert_eq_int(pthread_create(&t, NULL, set_later, &s), 0);
	gc_assert_ok(ev_wait(kfd, &s.id, 1, false, WAKE_TIMEOUT_MS, &got));
	pthread_join(t, NULL);
	gc_assert_ok(s.err);
	gc_assert_f(got == KFD_IOC_WAIT_RESULT_COMPLETE, "blocked wait: wait_result %s",
		    wait_name(got));
}

static void test_wait_wakeup(void *fx)
{
	(void)fx;
	run_fresh(wakeup_child);
}

/* ----------------------------------------------------------- fixture */

static void *events_setup(void)
{
	struct gc_kfd *kfd = gc_kfd_require();

	gc_info("KFD UAPI %u.%u, %u GPU(s), KFD_SIGNAL_EVENT_LIMIT %u", kfd->major, kfd->minor,
		kfd->n_gpus, KFD_SIGNAL_EVENT_LIMIT);
	return kfd;
}

static void events_teardown(void *data)
{
	gc_kfd_close(data);
}

static const struct gc_fixture fixture = {
	.setup = events_setup,
	.teardown = events_teardown,
};

static const struct gc_subtest subtests[] = {
	{ "limit-mapped", test_limit_mapped,
	  "event page mapped (the kernel's, else a user GTT BO): page bytes / 8 - 1 signal "
	  "events (4095), the next ENOSPC" },
	{ "limit-unmapped", test_limit_unmapped,
	  "event page not mapped: 255 signal events (256 kernel slots), the next ENOSPC; "
	  "skips on a kernel with no page of its own" },
	{ "destroy-frees-slot", test_destroy_frees_slot,
	  "at the limit, destroy one: the next create gets its ID, then ENOSPC again" },
	{ "wait-timeout", test_wait_timeout,
	  "unsignaled event: immediate and 20 ms waits return TIMEOUT (elapsed as a metric)" },
	{ "set-reset", test_set_reset,
	  "set/wait/reset, manual vs auto-reset; unknown ID: EINVAL for every call" },
	{ "wait-all-any", test_wait_all_any,
	  "wait_for_all 0 completes on one event, 1 only when all are set" },
	{ "wait-wakeup", test_wait_wakeup,
	  "a blocked wait is woken by SET_EVENT from another thread: COMPLETE" },
	{ 0 }
};

GC_MAIN(.name = "kfd_events", .description = "KFD signal events: limit, slots, set/reset/wait",
	.subtests = subtests, .fixture = &fixture)
