/* SPDX-License-Identifier: MIT */
/*
 * AMD SMI (libamd_smi), opened at run time through a table of the entry
 * points the session tests call, typed from gc_amdsmi_abi.h. amdsmi is not
 * packaged by Debian; a missing library, a missing symbol or another ABI
 * major is a reason to skip, never a crash.
 */
#ifndef GPUCONFORM_GC_AMDSMI_H
#define GPUCONFORM_GC_AMDSMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc_amdsmi_abi.h"

struct gc_amdsmi_fn {
	/* core: every one must resolve for gc_amdsmi_open() to succeed */
	gc_amdsmi_ret (*init)(uint64_t flags);                         /* amdsmi_init */
	gc_amdsmi_ret (*shut_down)(void);                              /* amdsmi_shut_down */
	gc_amdsmi_ret (*status_string)(gc_amdsmi_ret r, const char **s); /* amdsmi_status_code_to_string */
	gc_amdsmi_ret (*lib_version)(gc_amdsmi_version *v);            /* amdsmi_get_lib_version */
	/* queries: gc_amdsmi_missing() names the first that did not resolve */
	gc_amdsmi_ret (*socket_handles)(uint32_t *n, gc_amdsmi_socket *s);
	gc_amdsmi_ret (*processor_handles)(gc_amdsmi_socket s, uint32_t *n, gc_amdsmi_processor *p);
	gc_amdsmi_ret (*processor_type)(gc_amdsmi_processor p, uint32_t *type);
	gc_amdsmi_ret (*by_uuid)(const char *uuid, gc_amdsmi_processor *p);
	gc_amdsmi_ret (*uuid)(gc_amdsmi_processor p, unsigned int *len, char *uuid);
	gc_amdsmi_ret (*asic_info)(gc_amdsmi_processor p, gc_amdsmi_asic_info *info);
	gc_amdsmi_ret (*bdf_id)(gc_amdsmi_processor p, uint64_t *bdfid);
	gc_amdsmi_ret (*memory_total)(gc_amdsmi_processor p, uint32_t type, uint64_t *total);
	gc_amdsmi_ret (*temp_metric)(gc_amdsmi_processor p, uint32_t sensor, uint32_t metric,
				     int64_t *t);
	gc_amdsmi_ret (*busy_percent)(gc_amdsmi_processor p, uint32_t *pct);
};

struct gc_amdsmi {
	void *lib;
	char soname[64];
	struct gc_amdsmi_fn fn;
	/* what gc_amdsmi_check_version() read (26.x layout); have_version once it did */
	unsigned major, minor, release;
	bool have_version;
};

/*
 * dlopen the first of libamd_smi.so.26, libamd_smi.so and the same under
 * /opt/rocm/lib, and resolve the table: 0, -ENOENT (no library) or -ENOSYS
 * (a core symbol missing), with why[].
 */
int gc_amdsmi_open(struct gc_amdsmi *a, char *why, size_t why_len);
void gc_amdsmi_close(struct gc_amdsmi *a);

/* The symbol of the first query entry point that did not resolve, or NULL. */
const char *gc_amdsmi_missing(const struct gc_amdsmi *a);

/*
 * Inside a session (23.x and 24.x libraries answered amdsmi_get_lib_version
 * only after amdsmi_init): 0 when the library's major is
 * GC_AMDSMI_ABI_MAJOR, -EPROTO when it is another (why[] names both), -EIO
 * when the call fails (why[] names the status). The version read is kept
 * in a->major, minor, release (have_version).
 */
int gc_amdsmi_check_version(struct gc_amdsmi *a, char *why, size_t why_len);

/* `AMDSMI_STATUS_NOT_INIT` for the codes gc_amdsmi_abi.h declares, else `amdsmi_status_t N`. */
const char *gc_amdsmi_status_name(gc_amdsmi_ret r, char *buf, size_t len);

/* The name and the library's words (amdsmi_status_code_to_string), the name once. */
const char *gc_amdsmi_strerror(const struct gc_amdsmi *a, gc_amdsmi_ret r, char *buf, size_t len);

#endif
