/* SPDX-License-Identifier: MIT */
#include "gc_nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dl.h"

static const struct {
	size_t off;
	const char *sym;
} table[] = {
#define E(field, sym) { offsetof(struct gc_nvml_fn, field), sym }
	E(init, "nvmlInit_v2"),
	E(init_flags, "nvmlInitWithFlags"),
	E(shutdown, "nvmlShutdown"),
	E(error_string, "nvmlErrorString"),
	E(driver_version, "nvmlSystemGetDriverVersion"),
	E(count, "nvmlDeviceGetCount_v2"),
	E(by_index, "nvmlDeviceGetHandleByIndex_v2"),
	E(by_uuid, "nvmlDeviceGetHandleByUUID"),
	E(uuid, "nvmlDeviceGetUUID"),
	E(name, "nvmlDeviceGetName"),
	E(serial, "nvmlDeviceGetSerial"),
	E(pci, "nvmlDeviceGetPciInfo_v3"),
	E(memory, "nvmlDeviceGetMemoryInfo"),
	E(temperature, "nvmlDeviceGetTemperature"),
	E(utilization, "nvmlDeviceGetUtilizationRates"),
#undef E
};

int gc_nvml_open(struct gc_nvml *n, char *why, size_t why_len)
{
	static const char *const sonames[] = { "libnvidia-ml.so.1", "libnvidia-ml.so" };

	memset(n, 0, sizeof(*n));
	n->lib = gc_dlopen_first(sonames, sizeof(sonames) / sizeof(sonames[0]), RTLD_NOW | RTLD_LOCAL,
				 n->soname, sizeof(n->soname), why, why_len);
	if (!n->lib)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		void *p = dlsym(n->lib, table[i].sym);

		if (!p) {
			snprintf(why, why_len, "%s: no symbol %s", n->soname, table[i].sym);
			gc_nvml_close(n);
			return -ENOSYS;
		}
		memcpy((char *)&n->fn + table[i].off, &p, sizeof(p));
	}
	return 0;
}

void gc_nvml_close(struct gc_nvml *n)
{
	/*
	 * No dlclose: a thread a watchdog gave up on may still be inside the
	 * library, and unloading it under that thread crashes the process. The
	 * driver's library stays loaded, as libcuda does.
	 */
	memset(n, 0, sizeof(*n));
}

const char *gc_nvml_ret_name(gc_nvml_ret r, char *buf, size_t len)
{
	static const struct {
		gc_nvml_ret r;
		const char *name;
	} names[] = {
		{ GC_NVML_SUCCESS, "NVML_SUCCESS" },
		{ GC_NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED" },
		{ GC_NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT" },
		{ GC_NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED" },
		{ GC_NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION" },
		{ GC_NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND" },
		{ GC_NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE" },
		{ GC_NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED" },
		{ GC_NVML_ERROR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND" },
		{ GC_NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST" },
		{ GC_NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].r == r) {
			snprintf(buf, len, "%s", names[i].name);
			return buf;
		}
	snprintf(buf, len, "nvmlReturn_t %d", r);
	return buf;
}

const char *gc_nvml_strerror(const struct gc_nvml *n, gc_nvml_ret r, char *buf, size_t len)
{
	char name[48];
	const char *words = n->fn.error_string ? n->fn.error_string(r) : NULL;

	gc_nvml_ret_name(r, name, sizeof(name));
	if (words)
		snprintf(buf, len, "%s (%s)", name, words);
	else
		snprintf(buf, len, "%s", name);
	return buf;
}
