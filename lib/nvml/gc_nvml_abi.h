/* SPDX-License-Identifier: MIT */
/*
 * The part of the NVML C ABI gpuconform calls, declared in our own names
 * from the NVML API reference (nvml.h, API version 13 and the _v2 / _v3
 * entry points older drivers export too): return codes, init flags, buffer
 * sizes, the structures the session tests read. No Debian package ships
 * <nvml.h>, so nvml_session builds everywhere from these;
 * tests/unit/test_nvml_abi.c checks every size, offset and constant here
 * against <nvml.h> wherever that header is installed (the device machines).
 */
#ifndef GPUCONFORM_GC_NVML_ABI_H
#define GPUCONFORM_GC_NVML_ABI_H

/* nvmlReturn_t values the tests name. */
enum {
	GC_NVML_SUCCESS = 0,
	GC_NVML_ERROR_UNINITIALIZED = 1,
	GC_NVML_ERROR_INVALID_ARGUMENT = 2,
	GC_NVML_ERROR_NOT_SUPPORTED = 3,
	GC_NVML_ERROR_NO_PERMISSION = 4,
	GC_NVML_ERROR_NOT_FOUND = 6,
	GC_NVML_ERROR_INSUFFICIENT_SIZE = 7,
	GC_NVML_ERROR_DRIVER_NOT_LOADED = 9,
	GC_NVML_ERROR_LIBRARY_NOT_FOUND = 12,
	GC_NVML_ERROR_GPU_IS_LOST = 15,
	GC_NVML_ERROR_UNKNOWN = 999,
};
typedef int gc_nvml_ret; /* nvmlReturn_t: an enum, int-sized */

/* nvmlInitWithFlags flags. */
#define GC_NVML_INIT_FLAG_NO_GPUS 1u   /* do not fail when no GPU is found */
#define GC_NVML_INIT_FLAG_NO_ATTACH 2u /* do not attach GPUs */

#define GC_NVML_UUID_LEN 96        /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define GC_NVML_NAME_LEN 96        /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define GC_NVML_SERIAL_LEN 30      /* NVML_DEVICE_SERIAL_BUFFER_SIZE */
#define GC_NVML_BUS_ID_LEN 32      /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */
#define GC_NVML_BUS_ID_LEGACY_LEN 16 /* NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE */
#define GC_NVML_DRIVER_VERSION_LEN 80 /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */

#define GC_NVML_TEMPERATURE_GPU 0 /* nvmlTemperatureSensors_t */

typedef struct gc_nvml_device_st *gc_nvml_device; /* nvmlDevice_t: opaque */

/* nvmlPciInfo_t (nvmlDeviceGetPciInfo_v3). */
typedef struct {
	char bus_id_legacy[GC_NVML_BUS_ID_LEGACY_LEN];
	unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[GC_NVML_BUS_ID_LEN];
} gc_nvml_pci;

/* nvmlMemory_t (nvmlDeviceGetMemoryInfo). */
typedef struct {
	unsigned long long total, free, used;
} gc_nvml_memory;

/* nvmlUtilization_t. */
typedef struct {
	unsigned int gpu, memory;
} gc_nvml_utilization;

#endif
