// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/amdgpu's pure logic, no GPU needed: the amdgpu card list,
 * the render node of a card and what gc_amdgpu_open() says on a sysfs tree
 * made up in a scratch directory, the leak rule for the device-wide heap
 * usage and its message, and the errno a failed libdrm call means.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "gc_amdgpu_drm.h"

/* ------------------------------------------------------------ a made-up sysfs */

struct fake {
	char root[PATH_MAX];
};

/* mkdir -p of root/rel. */
static void fake_dir(const struct fake *f, const char *rel)
{
	char path[PATH_MAX + 256];
	size_t base = strlen(f->root) + 1;

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	for (char *p = path + base; ; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		gc_assert_f(mkdir(path, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", path,
			    strerror(errno));
		*p = c;
		if (!c)
			break;
	}
}

/* A cardN whose device is bound to driver, with the given entries under device/drm. */
static void fake_card(const struct fake *f, int n, const char *driver, const char *const *drm)
{
	char rel[128], path[PATH_MAX + 128], target[128];

	snprintf(rel, sizeof(rel), "card%d/device", n);
	fake_dir(f, rel);
	snprintf(path, sizeof(path), "%s/card%d/device/driver", f->root, n);
	snprintf(target, sizeof(target), "../../../bus/pci/drivers/%s", driver);
	gc_assert_syscall(symlink(target, path));
	for (; drm && *drm; drm++) {
		snprintf(rel, sizeof(rel), "card%d/device/drm/%s", n, *drm);
		fake_dir(f, rel);
	}
}

/* A scratch root under $TMPDIR (or /tmp), made now. */
static void fake_new(struct fake *f)
{
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(f->root, sizeof(f->root), "%s/gc-unit-amdgpu-drm-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");

	gc_assert((size_t)n < sizeof(f->root) && mkdtemp(f->root) != NULL);
}

static int drop_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The whole scratch tree, deepest first; symbolic links removed, not followed. */
static void fake_drop(const struct fake *f)
{
	gc_assert_syscall(nftw(f->root, drop_one, 16, FTW_DEPTH | FTW_PHYS));
}

/* ------------------------------------------------------------------ tests */

static void test_parse_cards(void *fx)
{
	int c[GC_AMDGPU_MAX_DEVS];

	(void)fx;
	gc_assert_cmpint(gc_amdgpu_parse_cards("card3 card0 card12", c, 16), ==, 3);
	gc_assert_cmpint(c[0], ==, 0);
	gc_assert_cmpint(c[1], ==, 3);
	gc_assert_cmpint(c[2], ==, 12);
	gc_assert_cmpint(gc_amdgpu_parse_cards("", c, 16), ==, 0);
	gc_assert_cmpint(gc_amdgpu_parse_cards(" card1  ", c, 16), ==, 1);
	gc_assert_cmpint(c[0], ==, 1);
	gc_assert_errno(gc_amdgpu_parse_cards("card1 card1-DP-1", c, 16), EINVAL);
	gc_assert_errno(gc_amdgpu_parse_cards("card", c, 16), EINVAL);
	gc_assert_errno(gc_amdgpu_parse_cards("renderD128", c, 16), EINVAL);
	gc_assert_errno(gc_amdgpu_parse_cards("card99999999999", c, 16), EINVAL);
	gc_assert_errno(gc_amdgpu_parse_cards("card0 card1 card2", c, 2), E2BIG);
}

static void test_render_minor(void *fx)
{
	static const char *const with[] = { "card0", "renderD12x", "renderD128", NULL };
	static const char *const without[] = { "card1", NULL };
	struct fake f;

	(void)fx;
	fake_new(&f);
	fake_card(&f, 0, "amdgpu", with);
	fake_card(&f, 1, "amdgpu", without);
	fake_card(&f, 2, "amdgpu", NULL);
	gc_check_cmpint(gc_amdgpu_render_minor(f.root, 0), ==, 128);
	gc_check_errno(gc_amdgpu_render_minor(f.root, 1), ENOENT);
	gc_check_errno(gc_amdgpu_render_minor(f.root, 2), ENOENT); /* no device/drm at all */
	gc_check_errno(gc_amdgpu_render_minor(f.root, 7), ENOENT);
	fake_drop(&f);
}

/* What gc_amdgpu_open() returns and says, step by step of a growing tree. */
static void test_open_reasons(void *fx)
{
	static const char *const far[] = { "renderD9999", NULL };
	struct gc_amdgpu *ag = (struct gc_amdgpu *)&ag;
	char why[512], want[PATH_MAX + 64];
	struct fake f;

	(void)fx;
	fake_new(&f);
	fake_card(&f, 0, "nvidia", far);
	gc_check_errno(gc_amdgpu_open(f.root, &ag, why, sizeof(why)), ENODEV);
	gc_check(ag == NULL);
	snprintf(want, sizeof(want), "no amdgpu device under %s", f.root);
	gc_check_eq_str(why, want);
	fake_card(&f, 3, "amdgpu", NULL);
	gc_check_errno(gc_amdgpu_open(f.root, &ag, why, sizeof(why)), ENOENT);
	gc_check_f(strstr(why, "card3 is driven by amdgpu but") == why, "why: %s", why);
	fake_card(&f, 1, "amdgpu", far); /* card1 comes first, and has no device node */
	gc_check_errno(gc_amdgpu_open(f.root, &ag, why, sizeof(why)), ENOENT);
	gc_check_eq_str(why, "/dev/dri/renderD9999: No such file or directory");
	gc_check(gc_amdgpu_open_err_is_skip(-ENOENT) && gc_amdgpu_open_err_is_skip(-ENODEV) &&
		 gc_amdgpu_open_err_is_skip(-EACCES));
	gc_check(!gc_amdgpu_open_err_is_skip(-EIO) && !gc_amdgpu_open_err_is_skip(-ENOMEM));
	fake_drop(&f);
	gc_check_errno(gc_amdgpu_open(f.root, &ag, why, sizeof(why)), ENODEV); /* no DRM dir */
}

/* Device-wide usage: growth past slack is a leak, a fall never is. */
static void test_grew(void *fx)
{
	const struct gc_amdgpu_usage base = { .vram = 1000, .gtt = 2000 };

	(void)fx;
	gc_check(!gc_amdgpu_grew(&base, &base, 0));
	gc_check(!gc_amdgpu_grew(&base, &(struct gc_amdgpu_usage){ 1100, 2000 }, 100));
	gc_check(gc_amdgpu_grew(&base, &(struct gc_amdgpu_usage){ 1101, 2000 }, 100));
	gc_check(gc_amdgpu_grew(&base, &(struct gc_amdgpu_usage){ 1000, 2101 }, 100));
	gc_check(!gc_amdgpu_grew(&base, &(struct gc_amdgpu_usage){ 0, 0 }, 0));
	gc_check(!gc_amdgpu_grew(&base, &(struct gc_amdgpu_usage){ 10, 5000 }, 4000));
}

static void test_snapshot_diff(void *fx)
{
	static const char *const names[] = { "gpu0 (a)", "gpu1 (b)" };
	struct gc_amdgpu_snapshot b = { .n = 2, .use = { { 10, 10 }, { 10, 10 } },
					.render_fds = 2, .dmabuf_fds = 0 };
	struct gc_amdgpu_snapshot now = b;
	char msg[512];

	(void)fx;
	gc_check_cmpuint(gc_amdgpu_snapshot_diff(&b, &now, 0, names, msg, sizeof(msg)), ==, 0);
	gc_check_eq_str(msg, "");
	now.use[0].vram = 5; /* another process freed: not ours */
	now.use[1].gtt = 20;
	gc_check_cmpuint(gc_amdgpu_snapshot_diff(&b, &now, 10, names, msg, sizeof(msg)), ==, 0);
	gc_check_cmpuint(gc_amdgpu_snapshot_diff(&b, &now, 9, names, msg, sizeof(msg)), ==, 1);
	gc_check_eq_str(msg, "gpu1 (b): GTT heap usage 10 -> 20 bytes (+10, 9 tolerated)");
	now.dmabuf_fds = 1;
	now.render_fds = 3;
	gc_check_cmpuint(gc_amdgpu_snapshot_diff(&b, &now, 9, NULL, msg, sizeof(msg)), ==, 3);
	gc_check_eq_str(msg, "gpu1: GTT heap usage 10 -> 20 bytes (+10, 9 tolerated); "
			"render-node fds 2 -> 3; dma-buf fds 0 -> 1");
	gc_check_cmpuint(gc_amdgpu_snapshot_diff(&b, &now, 9, NULL, msg, 8), ==, 3);
	gc_check_cmpuint(strlen(msg), ==, 7);
}

/* libdrm's two failure styles: -errno, or drmIoctl's -1 with errno. */
static void test_failure_errno(void *fx)
{
	(void)fx;
	gc_check_cmpint(gc_amdgpu_failure_errno(0, EBADF), ==, 0);
	gc_check_cmpint(gc_amdgpu_failure_errno(-1, EBADF), ==, EBADF);
	gc_check_cmpint(gc_amdgpu_failure_errno(-1, EINVAL), ==, EINVAL);
	gc_check_cmpint(gc_amdgpu_failure_errno(-1, 0), ==, EPERM); /* -EPERM returned */
	gc_check_cmpint(gc_amdgpu_failure_errno(-EBADF, 0), ==, EBADF);
	gc_check_cmpint(gc_amdgpu_failure_errno(-EINVAL, EBADF), ==, EINVAL);
	gc_check_cmpint(gc_amdgpu_failure_errno(3, EBADF), ==, 0);
}

/* The device list: N of `gpu<N>` is the device's index (its place in card order). */
static void test_names(void *fx)
{
	static struct gc_amdgpu ag = { .n = 2, .devs = { { .index = 0, .card = 1 },
							 { .index = 1, .card = 4 } } };
	struct gc_devices devs = gc_amdgpu_devices(&ag);

	(void)fx;
	gc_check(devs.first == ag.devs && devs.n == 2 && devs.size == sizeof(ag.devs[0]));
	gc_check_cmpint(devs.index(&ag.devs[0], 0), ==, 0);
	gc_check_cmpint(devs.index(&ag.devs[1], 1), ==, 1);
	gc_check(!devs.id && !devs.kind);
}

static const struct gc_subtest subtests[] = {
	{ "parse-cards", test_parse_cards, "card lists sorted by number; anything else refused" },
	{ "render-minor", test_render_minor, "renderD<M> under cardN/device/drm, else ENOENT" },
	{ "open-reasons", test_open_reasons, "no amdgpu, no render node, no device node: errno "
	  "and reason" },
	{ "grew", test_grew, "a leak is growth past slack; a fall never is" },
	{ "snapshot-diff", test_snapshot_diff, "leaks counted and described per device and fd" },
	{ "failure-errno", test_failure_errno, "-errno and -1 + errno read alike; -1 alone is "
	  "EPERM" },
	{ "names", test_names, "the device list: gpu<index>, index the place in card order" },
	{ 0 }
};

GC_MAIN(.name = "unit_amdgpu_drm", .subtests = subtests)
