// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/smi's pure logic: which DRM cards amdgpu drives (on a
 * sysfs tree made up in a scratch directory), BDF ids as text, status codes
 * as text, the layouts gc_amdsmi_abi.h declares (offsets worked out by hand
 * from amdsmi.h 26.2.1: no <amdsmi.h> is installed to compare with), and
 * that opening libamd_smi works or says why. With GC_HAVE_RSMI, rocm_smi's
 * status names too.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "gc_amdgpu.h"
#include "gc_amdsmi.h"
#ifdef GC_HAVE_RSMI
#include "gc_rsmi.h"
#endif

/* ------------------------------------------------------------ a made-up sysfs */

struct tree {
	char root[PATH_MAX];
};

/* root/name/device/driver -> ../../../bus/pci/drivers/<driver> */
static void card(const struct tree *t, const char *name, const char *driver)
{
	char path[PATH_MAX + 64], target[128];

	snprintf(path, sizeof(path), "%s/%s", t->root, name);
	gc_assert_syscall(mkdir(path, 0700));
	if (!driver)
		return;
	snprintf(path, sizeof(path), "%s/%s/device", t->root, name);
	gc_assert_syscall(mkdir(path, 0700));
	snprintf(path, sizeof(path), "%s/%s/device/driver", t->root, name);
	snprintf(target, sizeof(target), "../../../bus/pci/drivers/%s", driver);
	gc_assert_syscall(symlink(target, path));
}

static void tree_make(struct tree *t)
{
	snprintf(t->root, sizeof(t->root), "/tmp/gc-unit-smi-XXXXXX");
	gc_assert(mkdtemp(t->root));
}

static void tree_remove(const struct tree *t)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	gc_assert_cmpint(system(cmd), ==, 0);
}

/* Only cardN whose device's driver is amdgpu: not connectors, render nodes or other drivers. */
static void test_cards(void *fx)
{
	struct tree t;
	char names[64], clause[256];
	int n;

	(void)fx;
	tree_make(&t);
	gc_assert_cmpint(gc_amdgpu_cards(t.root, names, sizeof(names)), ==, 0);
	gc_amdgpu_clause(t.root, &n, clause, sizeof(clause));
	gc_assert_cmpint(n, ==, 0);
	gc_assert(strncmp(clause, "no amdgpu device under ", 23) == 0);
	card(&t, "card0", "nvidia");
	card(&t, "card1", "amdgpu");
	card(&t, "card1-DP-1", "amdgpu");
	card(&t, "renderD129", "amdgpu");
	card(&t, "card2", NULL);
	gc_assert_cmpint(gc_amdgpu_cards(t.root, names, sizeof(names)), ==, 1);
	gc_assert_eq_str(names, "card1");
	card(&t, "card7", "amdgpu");
	gc_assert_cmpint(gc_amdgpu_cards(t.root, NULL, 0), ==, 2);
	gc_amdgpu_clause(t.root, &n, clause, sizeof(clause));
	gc_assert_cmpint(n, ==, 2);
	gc_assert(strncmp(clause, "amdgpu drives card", 18) == 0);
	tree_remove(&t);
	gc_assert_cmpint(gc_amdgpu_cards(t.root, names, sizeof(names)), ==, 0); /* no DRM at all */
	gc_assert_errno(gc_amdgpu_cards("/dev/null", names, sizeof(names)), ENOTDIR);
}

/* The BDF layout of rsmi_dev_pci_id_get and amdsmi_get_gpu_bdf_id. */
static void test_bdf(void *fx)
{
	char b[48];

	(void)fx;
	gc_assert_eq_str(gc_amdgpu_bdf(0x300, b, sizeof(b)), "0000:03:00.0");
	gc_assert_eq_str(gc_amdgpu_bdf((1ull << 32) | (0xc1 << 8) | (0x1f << 3) | 7, b,
				       sizeof(b)), "0001:c1:1f.7");
	gc_assert_eq_str(gc_amdgpu_bdf((2ull << 28) | (0x05 << 8), b, sizeof(b)),
			 "0000:05:00.0/p2");
	gc_assert_eq_str(gc_amdgpu_bdf(0x300, b, 5), "0000");
}

static void test_status_text(void *fx)
{
	char b[96];

	(void)fx;
	gc_assert_eq_str(gc_amdsmi_status_name(GC_AMDSMI_STATUS_NOT_INIT, b, sizeof(b)),
			 "AMDSMI_STATUS_NOT_INIT");
	gc_assert_eq_str(gc_amdsmi_status_name(GC_AMDSMI_STATUS_UNKNOWN_ERROR, b, sizeof(b)),
			 "AMDSMI_STATUS_UNKNOWN_ERROR");
	gc_assert_eq_str(gc_amdsmi_status_name(4242, b, sizeof(b)), "amdsmi_status_t 4242");
	gc_assert_eq_str(gc_amdgpu_status_text("X_BUSY", "busy", b, sizeof(b)), "X_BUSY (busy)");
	gc_assert_eq_str(gc_amdgpu_status_text("X_BUSY", "X_BUSY: busy", b, sizeof(b)),
			 "X_BUSY: busy");
	gc_assert_eq_str(gc_amdgpu_status_text("X_BUSY", NULL, b, sizeof(b)), "X_BUSY");
#ifdef GC_HAVE_RSMI
	gc_assert_eq_str(gc_rsmi_status_name(RSMI_STATUS_BUSY, b, sizeof(b)), "RSMI_STATUS_BUSY");
	gc_assert_eq_str(gc_rsmi_status_name((rsmi_status_t)4242, b, sizeof(b)),
			 "rsmi_status_t 4242");
	gc_assert(strstr(gc_rsmi_strerror(RSMI_STATUS_INIT_ERROR, b, sizeof(b)),
			 "RSMI_STATUS_INIT_ERROR") == b);
#endif
}

/* amdsmi.h 26.2.1's amdsmi_asic_info_t and amdsmi_version_t, member by member, on LP64. */
static void test_layout(void *fx)
{
	(void)fx;
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, vendor_id), ==, 256);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, vendor_name), ==, 260);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, subvendor_id), ==, 516);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, device_id), ==, 520);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, rev_id), ==, 528);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, asic_serial), ==, 532);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, oam_id), ==, 788);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, target_graphics_version), ==, 800);
	gc_assert_cmpuint(offsetof(gc_amdsmi_asic_info, flags), ==, 816);
	gc_assert_cmpuint(sizeof(gc_amdsmi_asic_info), ==, 904);
	gc_assert_cmpuint(offsetof(gc_amdsmi_version, build), ==, 16);
	gc_assert_cmpuint(sizeof(gc_amdsmi_version_buf), >=, 2 * sizeof(gc_amdsmi_version));
}

/* libamd_smi opens with its core symbols, or fails with -ENOENT / -ENOSYS and a reason. */
static void test_open(void *fx)
{
	struct gc_amdsmi a;
	char why[320] = "";
	int r = gc_amdsmi_open(&a, why, sizeof(why));

	(void)fx;
	gc_info("gc_amdsmi_open: %d %s", r, r ? why : a.soname);
	if (r == 0) {
		gc_assert(a.fn.init && a.fn.shut_down && a.fn.lib_version);
		gc_info("query symbols: %s", gc_amdsmi_missing(&a) ? gc_amdsmi_missing(&a) : "all");
		gc_amdsmi_close(&a);
		gc_assert(a.lib == NULL);
		return;
	}
	gc_assert_f(r == -ENOENT || r == -ENOSYS, "gc_amdsmi_open returned %d", r);
	gc_assert_f(why[0] != '\0', "no reason given for %d", r);
	gc_assert(a.lib == NULL);
}

static const struct gc_subtest subtests[] = {
	{ "amdgpu-cards", test_cards, "cardN bound to amdgpu, nothing else; no DRM is none" },
	{ "bdf", test_bdf, "BDF ids as text, partition included" },
	{ "status-text", test_status_text, "status codes by name, unknown ones by number" },
	{ "amdsmi-layout", test_layout, "the declared amdsmi structures, member by member" },
	{ "amdsmi-open", test_open, "libamd_smi opens, or says why not" },
	{ 0 }
};

GC_MAIN(.name = "unit_smi", .subtests = subtests)
