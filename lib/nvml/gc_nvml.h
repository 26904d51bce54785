/* SPDX-License-Identifier: MIT */
/*
 * NVML, opened at run time (libnvidia-ml.so.1 comes with the driver, not the
 * toolkit), through a table of the entry points the session tests call,
 * typed from gc_nvml_abi.h. A missing library or symbol is a reason, not a
 * crash: the callers skip naming it.
 */
#ifndef GPUCONFORM_GC_NVML_H
#define GPUCONFORM_GC_NVML_H

#include <stddef.h>

#include "gc_nvml_abi.h"

struct gc_nvml_fn {
	gc_nvml_ret (*init)(void);                       /* nvmlInit_v2 */
	gc_nvml_ret (*init_flags)(unsigned int flags);   /* nvmlInitWithFlags */
	gc_nvml_ret (*shutdown)(void);                   /* nvmlShutdown */
	const char *(*error_string)(gc_nvml_ret r);      /* nvmlErrorString */
	gc_nvml_ret (*driver_version)(char *v, unsigned int len);
	gc_nvml_ret (*count)(unsigned int *n);           /* nvmlDeviceGetCount_v2 */
	gc_nvml_ret (*by_index)(unsigned int i, gc_nvml_device *d);
	gc_nvml_ret (*by_uuid)(const char *uuid, gc_nvml_device *d);
	gc_nvml_ret (*uuid)(gc_nvml_device d, char *uuid, unsigned int len);
	gc_nvml_ret (*name)(gc_nvml_device d, char *name, unsigned int len);
	gc_nvml_ret (*serial)(gc_nvml_device d, char *serial, unsigned int len);
	gc_nvml_ret (*pci)(gc_nvml_device d, gc_nvml_pci *pci);  /* nvmlDeviceGetPciInfo_v3 */
	gc_nvml_ret (*memory)(gc_nvml_device d, gc_nvml_memory *m);
	gc_nvml_ret (*temperature)(gc_nvml_device d, int sensor, unsigned int *t);
	gc_nvml_ret (*utilization)(gc_nvml_device d, gc_nvml_utilization *u);
};

struct gc_nvml {
	void *lib;
	char soname[64];
	struct gc_nvml_fn fn;
};

/* dlopen and resolve: 0, -ENOENT (no library) or -ENOSYS (a symbol missing), with why[]. */
int gc_nvml_open(struct gc_nvml *n, char *why, size_t why_len);
/* Forget the table; the library stays loaded (threads may still be inside it). */
void gc_nvml_close(struct gc_nvml *n);

/* `NVML_ERROR_UNINITIALIZED` for the codes the tests name, else `nvmlReturn_t N`. Pure. */
const char *gc_nvml_ret_name(gc_nvml_ret r, char *buf, size_t len);

/* `NVML_ERROR_UNINITIALIZED (Uninitialized)`: the name and the library's own words. */
const char *gc_nvml_strerror(const struct gc_nvml *n, gc_nvml_ret r, char *buf, size_t len);

#endif
