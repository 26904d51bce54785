/* SPDX-License-Identifier: MIT */
/*
 * The part of the AMD SMI C ABI (libamd_smi, ROCm's bare-metal amdsmi)
 * gpuconform calls, declared in our own names. No Debian package ships
 * <amd_smi/amdsmi.h>, so amdsmi_session builds everywhere from these.
 *
 * Every value below is taken from amdsmi.h as published in
 * ROCm/rocm-systems at commit a881068735de99de46183f9a0a37ef0ba5f89de6,
 * projects/amdsmi/include/amd_smi/amdsmi.h, whose library version is
 * AMDSMI_LIB_VERSION_MAJOR 26, MINOR 2, RELEASE 1. That header says:
 * "Major version should be changed for every header change that breaks ABI [...]"
 * [src ROCm/rocm-systems projects/amdsmi/include/amd_smi/amdsmi.h @
 * a881068735de], so gc_amdsmi_open() accepts a library only when
 * amdsmi_get_lib_version() reports the same major (GC_AMDSMI_ABI_MAJOR).
 * Older libraries (23.x, 24.x) laid amdsmi_version_t out with a `year`
 * first; gc_amdsmi_version_buf leaves room for either layout, and their
 * year reads as a major that differs.
 *
 * NOT CHECKED against a real <amdsmi.h> or library: none is installed on
 * any machine this was written on.
 */
#ifndef GPUCONFORM_GC_AMDSMI_ABI_H
#define GPUCONFORM_GC_AMDSMI_ABI_H

#include <stdint.h>

#define GC_AMDSMI_ABI_MAJOR 26u /* AMDSMI_LIB_VERSION_MAJOR */

/*
 * amdsmi_status_t: an enum whose largest value is 0xFFFFFFFF (unsigned int).
 * X(NAME, value) for each code that fits an int, listed once: it makes both
 * the enum of GC_NAME = value below and the names gc_amdsmi_status_name()
 * prints; the two codes past INT_MAX follow as defines.
 */
typedef uint32_t gc_amdsmi_ret;
#define GC_AMDSMI_STATUSES(X)                   \
	X(AMDSMI_STATUS_SUCCESS, 0)             \
	X(AMDSMI_STATUS_INVAL, 1)               \
	X(AMDSMI_STATUS_NOT_SUPPORTED, 2)       \
	X(AMDSMI_STATUS_NOT_YET_IMPLEMENTED, 3) \
	X(AMDSMI_STATUS_FAIL_LOAD_MODULE, 4)    \
	X(AMDSMI_STATUS_FAIL_LOAD_SYMBOL, 5)    \
	X(AMDSMI_STATUS_DRM_ERROR, 6)           \
	X(AMDSMI_STATUS_API_FAILED, 7)          \
	X(AMDSMI_STATUS_TIMEOUT, 8)             \
	X(AMDSMI_STATUS_RETRY, 9)               \
	X(AMDSMI_STATUS_NO_PERM, 10)            \
	X(AMDSMI_STATUS_INTERRUPT, 11)          \
	X(AMDSMI_STATUS_IO, 12)                 \
	X(AMDSMI_STATUS_FILE_ERROR, 14)         \
	X(AMDSMI_STATUS_OUT_OF_RESOURCES, 15)   \
	X(AMDSMI_STATUS_INTERNAL_EXCEPTION, 16) \
	X(AMDSMI_STATUS_INIT_ERROR, 18)         \
	X(AMDSMI_STATUS_REFCOUNT_OVERFLOW, 19)  \
	X(AMDSMI_STATUS_BUSY, 30)               \
	X(AMDSMI_STATUS_NOT_FOUND, 31)          \
	X(AMDSMI_STATUS_NOT_INIT, 32)           \
	X(AMDSMI_STATUS_NO_SLOT, 33)            \
	X(AMDSMI_STATUS_DRIVER_NOT_LOADED, 34)  \
	X(AMDSMI_STATUS_MORE_DATA, 39)          \
	X(AMDSMI_STATUS_NO_DATA, 40)            \
	X(AMDSMI_STATUS_INSUFFICIENT_SIZE, 41)  \
	X(AMDSMI_STATUS_UNEXPECTED_DATA, 43)    \
	X(AMDSMI_STATUS_NON_AMD_CPU, 44)        \
	X(AMDSMI_STATUS_NO_HSMP_DRV, 47)        \
	X(AMDSMI_STATUS_NO_DRV, 51)             \
	X(AMDSMI_STATUS_FILE_NOT_FOUND, 52)

enum {
#define GC_AMDSMI_STATUS_ENUM(name, value) GC_##name = value,
	GC_AMDSMI_STATUSES(GC_AMDSMI_STATUS_ENUM)
#undef GC_AMDSMI_STATUS_ENUM
};
#define GC_AMDSMI_STATUS_MAP_ERROR 0xFFFFFFFEu
#define GC_AMDSMI_STATUS_UNKNOWN_ERROR 0xFFFFFFFFu

/* amdsmi_init_flags_t (amdsmi_init takes them as uint64_t). */
#define GC_AMDSMI_INIT_ALL_PROCESSORS 0xFFFFFFFFull
#define GC_AMDSMI_INIT_AMD_CPUS 0x1ull
#define GC_AMDSMI_INIT_AMD_GPUS 0x2ull
#define GC_AMDSMI_INIT_NON_AMD_CPUS 0x4ull
#define GC_AMDSMI_INIT_NON_AMD_GPUS 0x8ull
#define GC_AMDSMI_INIT_AMD_APUS (GC_AMDSMI_INIT_AMD_CPUS | GC_AMDSMI_INIT_AMD_GPUS)

/* processor_type_t (an int-sized enum). */
#define GC_AMDSMI_PROCESSOR_TYPE_AMD_GPU 1u

#define GC_AMDSMI_MEM_TYPE_VRAM 0u           /* amdsmi_memory_type_t */
#define GC_AMDSMI_TEMPERATURE_TYPE_HOTSPOT 1u /* amdsmi_temperature_type_t (= JUNCTION) */
#define GC_AMDSMI_TEMP_CURRENT 0u            /* amdsmi_temperature_metric_t */

#define GC_AMDSMI_GPU_UUID_SIZE 38    /* AMDSMI_GPU_UUID_SIZE */
#define GC_AMDSMI_MAX_STRING_LENGTH 256 /* AMDSMI_MAX_STRING_LENGTH */

typedef void *gc_amdsmi_socket;    /* amdsmi_socket_handle: opaque */
typedef void *gc_amdsmi_processor; /* amdsmi_processor_handle: opaque */

/* amdsmi_version_t. */
typedef struct {
	uint32_t major, minor, release;
	const char *build;
} gc_amdsmi_version;

/*
 * What gc_amdsmi passes to amdsmi_get_lib_version(): room for the 26.x
 * layout above and for the older one with a uint32_t year first (both keep
 * build at offset 16), so that neither writes past it.
 */
typedef union {
	gc_amdsmi_version v;
	unsigned char room[64];
} gc_amdsmi_version_buf;

/* amdsmi_asic_info_t. */
typedef struct {
	char market_name[GC_AMDSMI_MAX_STRING_LENGTH];
	uint32_t vendor_id;
	char vendor_name[GC_AMDSMI_MAX_STRING_LENGTH];
	uint32_t subvendor_id;
	uint64_t device_id;
	uint32_t rev_id;
	char asic_serial[GC_AMDSMI_MAX_STRING_LENGTH];
	uint32_t oam_id;
	uint32_t num_of_compute_units;
	uint64_t target_graphics_version;
	uint32_t subsystem_id;
	uint64_t flags;
	uint32_t reserved[19];
} gc_amdsmi_asic_info;

#endif
