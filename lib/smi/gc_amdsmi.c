// SPDX-License-Identifier: MIT
#include "gc_amdsmi.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "dl.h"
#include "gc_amdgpu.h"

static const struct {
	size_t off;
	const char *sym;
	bool core;
} table[] = {
#define E(field, sym, core) { offsetof(struct gc_amdsmi_fn, field), sym, core }
	E(init, "amdsmi_init", true),
	E(shut_down, "amdsmi_shut_down", true),
	E(status_string, "amdsmi_status_code_to_string", true),
	E(lib_version, "amdsmi_get_lib_version", true),
	E(socket_handles, "amdsmi_get_socket_handles", false),
	E(processor_handles, "amdsmi_get_processor_handles", false),
	E(processor_type, "amdsmi_get_processor_type", false),
	E(by_uuid, "amdsmi_get_processor_handle_from_uuid", false),
	E(uuid, "amdsmi_get_gpu_device_uuid", false),
	E(asic_info, "amdsmi_get_gpu_asic_info", false),
	E(bdf_id, "amdsmi_get_gpu_bdf_id", false),
	E(memory_total, "amdsmi_get_gpu_memory_total", false),
	E(temp_metric, "amdsmi_get_temp_metric", false),
	E(busy_percent, "amdsmi_get_gpu_busy_percent", false),
#undef E
};

static void *entry(const struct gc_amdsmi *a, size_t i)
{
	void *p;

	memcpy(&p, (const char *)&a->fn + table[i].off, sizeof(p));
	return p;
}

int gc_amdsmi_open(struct gc_amdsmi *a, char *why, size_t why_len)
{
	static const char *const sonames[] = { "libamd_smi.so.26", "libamd_smi.so",
					       "/opt/rocm/lib/libamd_smi.so.26",
					       "/opt/rocm/lib/libamd_smi.so" };
	char first[256] = "";

	memset(a, 0, sizeof(*a));
	a->lib = gc_dlopen_first(sonames, sizeof(sonames) / sizeof(sonames[0]), RTLD_NOW | RTLD_LOCAL,
				 a->soname, sizeof(a->soname), first, sizeof(first));
	if (!a->lib) {
		snprintf(why, why_len, "%s (also tried libamd_smi.so and /opt/rocm/lib)", first);
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		void *p = dlsym(a->lib, table[i].sym);

		if (!p && table[i].core) {
			snprintf(why, why_len, "%s: no symbol %s", a->soname, table[i].sym);
			gc_amdsmi_close(a);
			return -ENOSYS;
		}
		memcpy((char *)&a->fn + table[i].off, &p, sizeof(p));
	}
	return 0;
}

void gc_amdsmi_close(struct gc_amdsmi *a)
{
	if (a->lib)
		dlclose(a->lib);
	memset(a, 0, sizeof(*a));
}

const char *gc_amdsmi_missing(const struct gc_amdsmi *a)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!entry(a, i))
			return table[i].sym;
	return NULL;
}

int gc_amdsmi_check_version(struct gc_amdsmi *a, char *why, size_t why_len)
{
	gc_amdsmi_version_buf vb;
	gc_amdsmi_ret r;
	char b[160];

	memset(&vb, 0, sizeof(vb));
	r = a->fn.lib_version(&vb.v);
	if (r != GC_AMDSMI_STATUS_SUCCESS) {
		snprintf(why, why_len, "amdsmi_get_lib_version: %s",
			 gc_amdsmi_strerror(a, r, b, sizeof(b)));
		return -EIO;
	}
	a->major = vb.v.major;
	a->minor = vb.v.minor;
	a->release = vb.v.release;
	a->have_version = true;
	if (vb.v.major == GC_AMDSMI_ABI_MAJOR)
		return 0;
	snprintf(why, why_len, "%s: amdsmi_get_lib_version gives major %u (build %s); "
		 "gc_amdsmi_abi.h declares the ABI of major %u", a->soname, vb.v.major,
		 vb.v.build ? vb.v.build : "?", GC_AMDSMI_ABI_MAJOR);
	return -EPROTO;
}

const char *gc_amdsmi_status_name(gc_amdsmi_ret r, char *buf, size_t len)
{
	static const struct gc_amdgpu_code names[] = {
#define NAMED(name) { GC_##name, #name },
#define LISTED(name, value) NAMED(name)
		GC_AMDSMI_STATUSES(LISTED)
		NAMED(AMDSMI_STATUS_MAP_ERROR) NAMED(AMDSMI_STATUS_UNKNOWN_ERROR)
#undef LISTED
#undef NAMED
	};

	return gc_amdgpu_code_name(names, sizeof(names) / sizeof(names[0]), r, "amdsmi_status_t",
				   buf, len);
}

const char *gc_amdsmi_strerror(const struct gc_amdsmi *a, gc_amdsmi_ret r, char *buf, size_t len)
{
	const char *words = NULL;
	char name[48];

	gc_amdsmi_status_name(r, name, sizeof(name));
	if (!a->fn.status_string || a->fn.status_string(r, &words) != GC_AMDSMI_STATUS_SUCCESS)
		words = NULL;
	return gc_amdgpu_status_text(name, words, buf, len);
}
