/* SPDX-License-Identifier: MIT */
/*
 * What the AMD management-library helpers and tests share without any AMD
 * library: is an amdgpu device bound at all (so that a machine without one
 * skips, and a machine with one whose library fails to initialise fails),
 * a BDF id as text, status codes as text. Plain sysfs reads and pure
 * formatting.
 */
#ifndef GPUCONFORM_GC_AMDGPU_H
#define GPUCONFORM_GC_AMDGPU_H

#include <stddef.h>
#include <stdint.h>

#define GC_AMDGPU_DRM_DIR "/sys/class/drm"

/*
 * The entries cardN (N digits only: not the connectors cardN-DP-1) of
 * drm_dir whose device/driver link names the `amdgpu` driver. Their names,
 * space separated, into names (truncated, always terminated). The count;
 * 0 when drm_dir does not exist (no DRM device at all); -errno otherwise.
 */
int gc_amdgpu_cards(const char *drm_dir, char *names, size_t len);

/*
 * A clause for skip and failure reasons: `no amdgpu device under
 * /sys/class/drm`, `amdgpu drives card0 card1` or `/sys/class/drm: <errno
 * text>`. Returns buf; the count of amdgpu cards (or -errno) into *n.
 */
const char *gc_amdgpu_clause(const char *drm_dir, int *n, char *buf, size_t len);

/*
 * `0000:c1:00.0` from a BDF id laid out as rocm_smi.h (rsmi_dev_pci_id_get)
 * and amdsmi.h (amdsmi_get_gpu_bdf_id) document it: domain [63:32], bus
 * [15:8], device [7:3], function [2:0]; amdsmi.h adds a partition id in
 * [31:28], appended as `/p<N>` when it is not 0. Pure.
 */
const char *gc_amdgpu_bdf(uint64_t bdfid, char *buf, size_t len);

/* A status code and its name, for gc_amdgpu_code_name(). */
struct gc_amdgpu_code {
	uint32_t code;
	const char *name;
};

/* The name of code r in names[0..n), else `<type> <r>` (`rsmi_status_t 77`). Pure. */
const char *gc_amdgpu_code_name(const struct gc_amdgpu_code *names, size_t n, uint32_t r,
				const char *type, char *buf, size_t len);

/*
 * `NAME (words)`: a code's name and the library's own words for it; the
 * words alone where they already start with the name, the name alone where
 * there are none (words NULL). Pure.
 */
const char *gc_amdgpu_status_text(const char *name, const char *words, char *buf, size_t len);

#endif
