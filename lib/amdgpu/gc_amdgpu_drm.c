// SPDX-License-Identifier: MIT
/*
 * libdrm_amdgpu helpers (see gc_amdgpu_drm.h). Every ioctl wrapper issues
 * exactly one ioctl(2), or one drmIoctl() where asked, and returns 0 or
 * -errno as it came back.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>

#include "devfd.h"
#include "gc_amdgpu.h"
#include "gc_amdgpu_drm.h"
#include "leakcheck.h"
#include "measure.h"

#define RENDER_PREFIX "/dev/dri/renderD"
/*
 * dma_buf_getfile() names its pseudo file `dmabuf`
 * [src gregkh/linux drivers/dma-buf/dma-buf.c @ 73e7709d9919].
 */
#define DMABUF_PREFIX "/dmabuf:"
#define DMABUF_PREFIX_OLD "anon_inode:dmabuf" /* before the dma-buf file system (5.3) */

/* --------------------------------------------------------------- discovery */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The number that is all of w[0..n) after prefix (`card12` -> 12); -1 for anything else. */
static int number_after(const char *w, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);
	long v = 0;

	if (n <= p || strncmp(w, prefix, p) != 0)
		return -1;
	for (size_t i = p; i < n; i++) {
		if (!isdigit((unsigned char)w[i]) || v > INT_MAX / 10)
			return -1;
		v = v * 10 + (w[i] - '0');
	}
	return v <= INT_MAX ? (int)v : -1;
}

int gc_amdgpu_parse_cards(const char *names, int *cards, size_t max)
{
	size_t count = 0;
	const char *p = names;

	while (*p) {
		size_t n;
		int c;

		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (!n)
			break;
		c = number_after(p, n, "card");
		if (c < 0)
			return -EINVAL;
		if (count == max)
			return -E2BIG;
		cards[count++] = c;
		p += n;
	}
	qsort(cards, count, sizeof(*cards), cmp_int);
	return (int)count;
}

int gc_amdgpu_render_minor(const char *drm_dir, int card)
{
	char path[PATH_MAX];
	struct dirent *e;
	int minor = -ENOENT;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/card%d/device/drm", drm_dir, card);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((e = readdir(dir)) && minor < 0) {
		int v = number_after(e->d_name, strlen(e->d_name), "renderD");

		if (v >= 0)
			minor = v;
	}
	closedir(dir);
	return minor;
}

bool gc_amdgpu_open_err_is_skip(int err)
{
	return err == -ENODEV || err == -ENOENT || err == -EACCES || err == -EPERM ||
	       err == -ENXIO;
}

int gc_amdgpu_failure_errno(int r, int saved_errno)
{
	if (r >= 0)
		return 0;
	if (r == -1)
		return saved_errno ? saved_errno : EPERM;
	return -r;
}

/* ------------------------------------------------------------------- open */

static void dev_release(struct gc_amdgpu_dev *d)
{
	if (d->adev)
		amdgpu_device_deinitialize(d->adev);
	if (d->fd >= 0)
		close(d->fd);
	d->adev = NULL;
	d->fd = -1;
}

static int dev_open(const char *drm_dir, struct gc_amdgpu_dev *d, char *why, size_t len)
{
	int err = gc_amdgpu_render_minor(drm_dir, d->card);

	if (err < 0) {
		snprintf(why, len, "card%d is driven by amdgpu but %s/card%d/device/drm has no "
		    "render node: %s", d->card, drm_dir, d->card, strerror(-err));
		return err;
	}
	d->render_minor = err;
	snprintf(d->node, sizeof(d->node), RENDER_PREFIX "%d", d->render_minor);
	d->fd = open(d->node, O_RDWR | O_CLOEXEC);
	if (d->fd < 0) {
		err = -errno;
		snprintf(why, len, "%s: %s", d->node, strerror(-err));
		return err;
	}
	err = amdgpu_device_initialize(d->fd, &d->drm_major, &d->drm_minor, &d->adev);
	if (err) {
		d->adev = NULL;
		snprintf(why, len, "amdgpu_device_initialize(%s): %s (%d)", d->node,
		    strerror(err < 0 ? -err : err), err);
		return err < 0 ? err : -EIO;
	}
	return 0;
}

/* The amdgpu cards under drm_dir, in card order, into ag->devs (not opened). */
static int find_cards(const char *drm_dir, struct gc_amdgpu *ag, char *why, size_t len)
{
	char names[512];
	int cards[GC_AMDGPU_MAX_DEVS];
	int n = gc_amdgpu_cards(drm_dir, names, sizeof(names));

	if (n == 0) {
		snprintf(why, len, "no amdgpu device under %s", drm_dir);
		return -ENODEV;
	}
	if (n > 0)
		n = gc_amdgpu_parse_cards(names, cards, GC_AMDGPU_MAX_DEVS);
	if (n < 0) {
		snprintf(why, len, "%s: amdgpu cards \"%s\": %s", drm_dir, names, strerror(-n));
		return n;
	}
	for (int i = 0; i < n; i++)
		ag->devs[i] = (struct gc_amdgpu_dev){ .index = (unsigned)i, .card = cards[i],
						      .fd = -1 };
	ag->n = (unsigned)n;
	return 0;
}

int gc_amdgpu_open(const char *drm_dir, struct gc_amdgpu **out, char *why, size_t why_len)
{
	struct gc_amdgpu *ag = calloc(1, sizeof(*ag));
	int err;

	*out = NULL;
	if (!ag) {
		snprintf(why, why_len, "out of host memory");
		return -ENOMEM;
	}
	err = find_cards(drm_dir, ag, why, why_len);
	for (unsigned i = 0; !err && i < ag->n; i++)
		err = dev_open(drm_dir, &ag->devs[i], why, why_len);
	if (err) {
		gc_amdgpu_close(ag);
		return err;
	}
	*out = ag;
	return 0;
}

void gc_amdgpu_close(struct gc_amdgpu *ag)
{
	if (!ag)
		return;
	for (unsigned i = 0; i < ag->n; i++)
		dev_release(&ag->devs[i]);
	free(ag);
}

struct gc_amdgpu *gc_amdgpu_require(unsigned need)
{
	struct gc_amdgpu *ag = NULL;
	char why[512];
	int err = gc_amdgpu_open(GC_AMDGPU_DRM_DIR, &ag, why, sizeof(why));
	unsigned n = err ? 0 : ag->n;

	if (err && !gc_amdgpu_open_err_is_skip(err))
		gc_fail("%s", why);
	if (need > 1 && n < need && (!err || err == -ENODEV)) {
		if (err)
			gc_info("%s", why);
		gc_amdgpu_close(ag);
		gc_skip("needs %u amdgpu GPUs, found %u", need, n);
	}
	if (err)
		gc_skip("%s", why);
	return ag;
}

/* ------------------------------------------------------------------ ioctls */

int gc_amdgpu_ioctl(int fd, enum gc_amdgpu_via via, unsigned long request, void *arg)
{
	int r = via == GC_AMDGPU_DRMIOCTL ? drmIoctl(fd, request, arg) : ioctl(fd, request, arg);

	return r == -1 ? -errno : 0;
}

int gc_amdgpu_gem_create(const struct gc_amdgpu_dev *d, enum gc_amdgpu_via via, uint64_t size,
			 uint64_t domains, uint64_t flags, uint32_t *handle)
{
	union drm_amdgpu_gem_create a = { .in = { .bo_size = size, .alignment = 4096,
						  .domains = domains, .domain_flags = flags } };
	int err = gc_amdgpu_ioctl(d->fd, via, DRM_IOCTL_AMDGPU_GEM_CREATE, &a);

	if (!err)
		*handle = a.out.handle;
	return err;
}

int gc_amdgpu_gem_close(const struct gc_amdgpu_dev *d, uint32_t handle)
{
	struct drm_gem_close a = { .handle = handle };

	return gc_amdgpu_ioctl(d->fd, GC_AMDGPU_RAW, DRM_IOCTL_GEM_CLOSE, &a);
}

int gc_amdgpu_gem_va(const struct gc_amdgpu_dev *d, enum gc_amdgpu_via via, uint32_t handle,
		     uint32_t op, uint64_t va, uint64_t offset, uint64_t size)
{
	struct drm_amdgpu_gem_va a = {
		.handle = handle,
		.operation = op,
		.flags = AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE |
			 AMDGPU_VM_PAGE_EXECUTABLE,
		.va_address = va,
		.offset_in_bo = offset,
		.map_size = size,
	};

	return gc_amdgpu_ioctl(d->fd, via, DRM_IOCTL_AMDGPU_GEM_VA, &a);
}

int gc_amdgpu_gem_wait_idle(const struct gc_amdgpu_dev *d, enum gc_amdgpu_via via,
			    uint32_t handle, uint64_t deadline_ns, uint32_t *busy)
{
	union drm_amdgpu_gem_wait_idle a = { .in = { .handle = handle, .timeout = deadline_ns } };
	int err = gc_amdgpu_ioctl(d->fd, via, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &a);

	if (!err)
		*busy = a.out.status;
	return err;
}

uint64_t gc_amdgpu_deadline_ns(uint64_t rel_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + rel_ns;
}

/* ---------------------------------------------------------- heap usage, leaks */

int gc_amdgpu_heap_usage(const struct gc_amdgpu_dev *d, struct gc_amdgpu_usage *u)
{
	struct amdgpu_heap_info vram, gtt;
	int err = amdgpu_query_heap_info(d->adev, AMDGPU_GEM_DOMAIN_VRAM, 0, &vram);

	if (!err)
		err = amdgpu_query_heap_info(d->adev, AMDGPU_GEM_DOMAIN_GTT, 0, &gtt);
	if (err)
		return err < 0 ? err : -EIO;
	u->vram = vram.heap_usage;
	u->gtt = gtt.heap_usage;
	return 0;
}

void gc_amdgpu_read_usage(const struct gc_amdgpu_dev *d, struct gc_amdgpu_usage *u)
{
	int err = gc_amdgpu_heap_usage(d, u);

	if (err)
		gc_fail("gpu%u (%s): amdgpu_query_heap_info: %s (%d)", d->index, d->node,
			strerror(-err), err);
}

const char *gc_amdgpu_describe(const struct gc_amdgpu_dev *d, char *buf, size_t len)
{
	struct amdgpu_heap_info vram, gtt;
	int n = snprintf(buf, len, "gpu%u: card%d, %s, amdgpu DRM %u.%u, ", d->index, d->card,
			 d->node, d->drm_major, d->drm_minor);
	int err = amdgpu_query_heap_info(d->adev, AMDGPU_GEM_DOMAIN_VRAM, 0, &vram);

	if (!err)
		err = amdgpu_query_heap_info(d->adev, AMDGPU_GEM_DOMAIN_GTT, 0, &gtt);
	if (n < 0 || (size_t)n >= len)
		return buf;
	if (err)
		snprintf(buf + n, len - (size_t)n, "heaps: %s", strerror(err < 0 ? -err : err));
	else
		snprintf(buf + n, len - (size_t)n, "VRAM heap %" PRIu64 " MiB (%" PRIu64 " MiB "
			 "used), GTT heap %" PRIu64 " MiB (%" PRIu64 " MiB used)",
			 vram.heap_size >> 20, vram.heap_usage >> 20, gtt.heap_size >> 20,
			 gtt.heap_usage >> 20);
	return buf;
}

bool gc_amdgpu_grew(const struct gc_amdgpu_usage *base, const struct gc_amdgpu_usage *now,
		    uint64_t slack)
{
	return now->vram > base->vram + slack || now->gtt > base->gtt + slack;
}

int gc_amdgpu_usage_settles(const struct gc_amdgpu_dev *d, const struct gc_amdgpu_usage *base,
			    uint64_t slack, unsigned settle_ms, struct gc_amdgpu_usage *now)
{
	uint64_t deadline = gc_now_ns() + (uint64_t)settle_ms * 1000000u;

	for (;;) {
		int err = gc_amdgpu_heap_usage(d, now);

		if (err)
			return err;
		if (!gc_amdgpu_grew(base, now, slack))
			return 0;
		if (gc_now_ns() >= deadline)
			return -EAGAIN;
		usleep(2000);
	}
}

static int count_fds(const char *prefix, int *n)
{
	int r = gc_devfd_count(prefix);

	if (r < 0)
		return r;
	*n += r;
	return 0;
}

int gc_amdgpu_snapshot(const struct gc_amdgpu *ag, struct gc_amdgpu_snapshot *s)
{
	int err = 0;

	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; !err && i < ag->n; i++)
		err = gc_amdgpu_heap_usage(&ag->devs[i], &s->use[i]);
	s->n = ag->n;
	if (!err)
		err = count_fds(RENDER_PREFIX, &s->render_fds);
	if (!err)
		err = count_fds(DMABUF_PREFIX, &s->dmabuf_fds);
	if (!err)
		err = count_fds(DMABUF_PREFIX_OLD, &s->dmabuf_fds);
	return err;
}

static void say_heap(const struct gc_leak_probe *p, uint64_t before, uint64_t now, char *msg,
		     size_t len)
{
	snprintf(msg, len, "%s heap usage %" PRIu64 " -> %" PRIu64 " bytes (+%" PRIu64 ", %" PRIu64
		 " tolerated)", p->name, before, now, now - before, p->slack);
}

_Static_assert(2 * GC_AMDGPU_MAX_DEVS + 2 <= GC_LEAK_MAX_PROBES, "every probe fits one reading");

/*
 * The probes: each device's VRAM and GTT heap usage (growth past slack
 * bytes), then render-node and dma-buf fds; devices named names[i] or `gpu<i>`.
 */
static void probes(const struct gc_amdgpu_snapshot *s, uint64_t slack, const char *const *names,
		   struct gc_leak_reading *r)
{
	const struct gc_leak_probe heap = { .slack = slack, .rule = GC_LEAK_GROWTH, .say = say_heap };
	const struct gc_leak_probe fds = { 0 };
	char own[32];

	r->n = 0;
	for (unsigned i = 0; i < s->n; i++) {
		snprintf(own, sizeof(own), "gpu%u", i);
		gc_leak_add(r, &heap, s->use[i].vram, "%s: VRAM", names ? names[i] : own);
		gc_leak_add(r, &heap, s->use[i].gtt, "%s: GTT", names ? names[i] : own);
	}
	gc_leak_add(r, &fds, (uint64_t)s->render_fds, "render-node fds");
	gc_leak_add(r, &fds, (uint64_t)s->dmabuf_fds, "dma-buf fds");
}

unsigned gc_amdgpu_snapshot_diff(const struct gc_amdgpu_snapshot *before,
				 const struct gc_amdgpu_snapshot *now, uint64_t slack,
				 const char *const *names, char *msg, size_t len)
{
	struct gc_leak_reading b, n;

	probes(before, slack, names, &b);
	probes(now, slack, names, &n);
	return gc_leak_diff(&b, &n, true, msg, len);
}

struct named {
	const struct gc_amdgpu *ag;
	const char *const *names;
};

static void read_probes(const struct gc_leak_set *set, struct gc_leak_reading *r, const char *when)
{
	const struct named *ctx = set->ctx;
	struct gc_amdgpu_snapshot now;
	int err = gc_amdgpu_snapshot(ctx->ag, &now);

	(void)when;
	if (err)
		gc_fail("leak check: cannot read heap usage or fds: %s", strerror(-err));
	probes(&now, set->slack, ctx->names, r);
}

void gc_amdgpu_leak_check(const struct gc_amdgpu *ag, const struct gc_amdgpu_snapshot *before,
			  uint64_t slack, unsigned settle_ms)
{
	char names[GC_AMDGPU_MAX_DEVS][64], tail[160];
	const char *np[GC_AMDGPU_MAX_DEVS];
	struct named ctx = { .ag = ag, .names = np };
	struct gc_leak_set set = { .read = read_probes, .ctx = &ctx, .slack = slack,
				   .settle_ms = settle_ms, .poll_us = 10000, .every_leak = true,
				   .msg_len = 1536, .tail = tail };

	for (unsigned i = 0; i < ag->n; i++) {
		snprintf(names[i], sizeof(names[i]), "gpu%u (%s)", i, ag->devs[i].node);
		np[i] = names[i];
	}
	snprintf(tail, sizeof(tail), " (after %u ms; heap usage is device-wide: another process "
		 "allocating on the same GPU meanwhile shows here too)", settle_ms);
	probes(before, slack, np, &set.before);
	gc_leak_check(&set);
}

/* ----------------------------------------------------------------- fixture */

void *gc_amdgpu_fixture_new(struct gc_amdgpu *ag, size_t size, uint64_t slack,
			    unsigned settle_ms)
{
	struct gc_amdgpu_fixture *f = calloc(1, size);
	char line[256];

	gc_assert_f(f != NULL, "calloc(%zu) failed", size);
	for (unsigned i = 0; i < ag->n; i++)
		gc_info("%s", gc_amdgpu_describe(&ag->devs[i], line, sizeof(line)));
	f->ag = ag;
	f->slack = slack;
	f->settle_ms = settle_ms;
	return f;
}

void gc_amdgpu_fixture_snapshot(void *data)
{
	struct gc_amdgpu_fixture *f = data;
	int err = gc_amdgpu_snapshot(f->ag, &f->before);

	if (err)
		gc_fail("leak snapshot: %s", strerror(-err));
}

void gc_amdgpu_fixture_check(void *data)
{
	struct gc_amdgpu_fixture *f = data;

	gc_amdgpu_leak_check(f->ag, &f->before, f->slack, f->settle_ms);
}

void gc_amdgpu_fixture_free(void *data)
{
	struct gc_amdgpu_fixture *f = data;

	gc_amdgpu_close(f->ag);
	free(f);
}

/* ---------------------------------------------------- per device, per pair */

static long dev_index(const void *d, size_t i)
{
	(void)i;
	return ((const struct gc_amdgpu_dev *)d)->index;
}

struct gc_devices gc_amdgpu_devices(const struct gc_amdgpu *ag)
{
	return (struct gc_devices){ .first = ag->devs, .n = ag->n, .size = sizeof(ag->devs[0]),
				    .index = dev_index };
}
