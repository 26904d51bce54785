// SPDX-License-Identifier: MIT
/*
 * lib/nvml declares the part of the NVML ABI it calls in its own names
 * (gc_nvml_abi.h), so the session tests build where <nvml.h> is not
 * installed. Where it is (GC_HAVE_NVML_H), every size, offset and constant
 * of those declarations is checked against NVIDIA's header at compile time.
 * The subtests check gc_nvml.c's pure helpers and that opening the library
 * either works or says why, wherever this builds.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core.h"
#include "gc_nvml.h"

#ifdef GC_HAVE_NVML_H
#include <nvml.h>

#include "abi_check.h"

SAME_LAYOUT(gc_nvml_ret, nvmlReturn_t);
SAME_LAYOUT(gc_nvml_device, nvmlDevice_t);
SAME_LAYOUT(gc_nvml_pci, nvmlPciInfo_t);
SAME_FIELDS(gc_nvml_pci, nvmlPciInfo_t, domain, bus, device);
SAME_OFFSET(gc_nvml_pci, pci_device_id, nvmlPciInfo_t, pciDeviceId);
SAME_OFFSET(gc_nvml_pci, pci_subsystem_id, nvmlPciInfo_t, pciSubSystemId);
SAME_OFFSET(gc_nvml_pci, bus_id, nvmlPciInfo_t, busId);
SAME_LAYOUT(gc_nvml_memory, nvmlMemory_t);
SAME_FIELDS(gc_nvml_memory, nvmlMemory_t, free, used);
SAME_LAYOUT(gc_nvml_utilization, nvmlUtilization_t);
SAME_FIELDS(gc_nvml_utilization, nvmlUtilization_t, memory);
SAME_VALUE(GC_NVML_SUCCESS, NVML_SUCCESS);
SAME_VALUE(GC_NVML_ERROR_UNINITIALIZED, NVML_ERROR_UNINITIALIZED);
SAME_VALUE(GC_NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_INVALID_ARGUMENT);
SAME_VALUE(GC_NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NOT_SUPPORTED);
SAME_VALUE(GC_NVML_ERROR_NO_PERMISSION, NVML_ERROR_NO_PERMISSION);
SAME_VALUE(GC_NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_FOUND);
SAME_VALUE(GC_NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INSUFFICIENT_SIZE);
SAME_VALUE(GC_NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_DRIVER_NOT_LOADED);
SAME_VALUE(GC_NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_LIBRARY_NOT_FOUND);
SAME_VALUE(GC_NVML_ERROR_GPU_IS_LOST, NVML_ERROR_GPU_IS_LOST);
SAME_VALUE(GC_NVML_ERROR_UNKNOWN, NVML_ERROR_UNKNOWN);
SAME_VALUE(GC_NVML_INIT_FLAG_NO_GPUS, NVML_INIT_FLAG_NO_GPUS);
SAME_VALUE(GC_NVML_INIT_FLAG_NO_ATTACH, NVML_INIT_FLAG_NO_ATTACH);
SAME_VALUE(GC_NVML_UUID_LEN, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
SAME_VALUE(GC_NVML_NAME_LEN, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
SAME_VALUE(GC_NVML_SERIAL_LEN, NVML_DEVICE_SERIAL_BUFFER_SIZE);
SAME_VALUE(GC_NVML_BUS_ID_LEN, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
SAME_VALUE(GC_NVML_BUS_ID_LEGACY_LEN, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE);
SAME_VALUE(GC_NVML_DRIVER_VERSION_LEN, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
SAME_VALUE(GC_NVML_TEMPERATURE_GPU, NVML_TEMPERATURE_GPU);

/* Entry points the table resolves have the shapes gc_nvml_fn assumes (NVIDIA's types). */
static void entry_types(void)
{
	_Static_assert(__builtin_types_compatible_p(__typeof__(*nvmlInit_v2), nvmlReturn_t(void)),
		       "nvmlInit_v2 type");
	_Static_assert(__builtin_types_compatible_p(__typeof__(*nvmlDeviceGetHandleByUUID),
						    nvmlReturn_t(const char *, nvmlDevice_t *)),
		       "nvmlDeviceGetHandleByUUID type");
	_Static_assert(__builtin_types_compatible_p(__typeof__(*nvmlDeviceGetPciInfo_v3),
						    nvmlReturn_t(nvmlDevice_t, nvmlPciInfo_t *)),
		       "nvmlDeviceGetPciInfo_v3 type");
}
#define HEADER_CHECKED 1
#else
#define HEADER_CHECKED 0
#endif

/* Names of the codes the tests use; anything else by number. */
static void test_ret_name(void *fx)
{
	char b[48];

	(void)fx;
#if HEADER_CHECKED
	entry_types();
#endif
	gc_assert_eq_str(gc_nvml_ret_name(GC_NVML_ERROR_UNINITIALIZED, b, sizeof(b)),
			 "NVML_ERROR_UNINITIALIZED");
	gc_assert_eq_str(gc_nvml_ret_name(GC_NVML_SUCCESS, b, sizeof(b)), "NVML_SUCCESS");
	gc_assert_eq_str(gc_nvml_ret_name(4242, b, sizeof(b)), "nvmlReturn_t 4242");
}

/* Without the library's error strings, only the name. */
static void test_strerror(void *fx)
{
	struct gc_nvml n;
	char b[96];

	(void)fx;
	memset(&n, 0, sizeof(n));
	gc_assert_eq_str(gc_nvml_strerror(&n, GC_NVML_ERROR_NOT_FOUND, b, sizeof(b)),
			 "NVML_ERROR_NOT_FOUND");
}

/* Opening works (every symbol resolved) or fails with -ENOENT / -ENOSYS and a reason. */
static void test_open(void *fx)
{
	struct gc_nvml n;
	char why[256] = "";
	int r = gc_nvml_open(&n, why, sizeof(why));

	(void)fx;
	gc_info("gc_nvml_open: %d %s%s (header checked: %s)", r, r ? why : "", r ? "" : n.soname,
		HEADER_CHECKED ? "yes" : "no: <nvml.h> not installed");
	if (r == 0) {
		gc_assert(n.fn.init && n.fn.utilization && n.fn.by_uuid);
		gc_nvml_close(&n);
		gc_assert(n.lib == NULL);
		return;
	}
	gc_assert_f(r == -ENOENT || r == -ENOSYS, "gc_nvml_open returned %d", r);
	gc_assert_f(why[0] != '\0', "no reason given for %d", r);
	gc_assert(n.lib == NULL);
}

static const struct gc_subtest subtests[] = {
	{ "ret-name", test_ret_name, "return codes by name, unknown ones by number" },
	{ "strerror", test_strerror, "the name alone without the library" },
	{ "open", test_open, "libnvidia-ml opens with every symbol, or says why not" },
	{ 0 }
};

GC_MAIN(.name = "unit_nvml_abi", .subtests = subtests)
