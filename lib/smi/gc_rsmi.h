/* SPDX-License-Identifier: MIT */
/*
 * rocm_smi helpers: status codes by name and in the library's own words
 * (rsmi_status_string). Debian ships <rocm_smi/rocm_smi.h> and
 * librocm_smi64 (librocm-smi-dev), so the library is linked, not opened.
 * Whether an amdgpu device exists at all is gc_amdgpu.h's business.
 */
#ifndef GPUCONFORM_GC_RSMI_H
#define GPUCONFORM_GC_RSMI_H

#include <stddef.h>

#include <rocm_smi/rocm_smi.h>

/* `RSMI_STATUS_BUSY` for every code rocm_smi.h names, else `rsmi_status_t N`. Pure. */
const char *gc_rsmi_status_name(rsmi_status_t r, char *buf, size_t len);

/*
 * `RSMI_STATUS_INIT_ERROR (An error occurred during initialization, ...)`:
 * the name and rsmi_status_string's words, the name once where the words
 * already start with it.
 */
const char *gc_rsmi_strerror(rsmi_status_t r, char *buf, size_t len);

#endif
