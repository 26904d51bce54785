// SPDX-License-Identifier: MIT
#include "gc_rsmi.h"

#include "gc_amdgpu.h"

const char *gc_rsmi_status_name(rsmi_status_t r, char *buf, size_t len)
{
	static const struct gc_amdgpu_code names[] = {
#define E(x) { x, #x }
		E(RSMI_STATUS_SUCCESS), E(RSMI_STATUS_INVALID_ARGS), E(RSMI_STATUS_NOT_SUPPORTED),
		E(RSMI_STATUS_FILE_ERROR), E(RSMI_STATUS_PERMISSION),
		E(RSMI_STATUS_OUT_OF_RESOURCES), E(RSMI_STATUS_INTERNAL_EXCEPTION),
		E(RSMI_STATUS_INPUT_OUT_OF_BOUNDS), E(RSMI_STATUS_INIT_ERROR),
		E(RSMI_STATUS_NOT_YET_IMPLEMENTED), E(RSMI_STATUS_NOT_FOUND),
		E(RSMI_STATUS_INSUFFICIENT_SIZE), E(RSMI_STATUS_INTERRUPT),
		E(RSMI_STATUS_UNEXPECTED_SIZE), E(RSMI_STATUS_NO_DATA),
		E(RSMI_STATUS_UNEXPECTED_DATA), E(RSMI_STATUS_BUSY),
		E(RSMI_STATUS_REFCOUNT_OVERFLOW), E(RSMI_STATUS_UNKNOWN_ERROR),
#undef E
	};

	return gc_amdgpu_code_name(names, sizeof(names) / sizeof(names[0]), (uint32_t)r,
				   "rsmi_status_t", buf, len);
}

const char *gc_rsmi_strerror(rsmi_status_t r, char *buf, size_t len)
{
	const char *words = NULL;
	char name[48];

	gc_rsmi_status_name(r, name, sizeof(name));
	if (rsmi_status_string(r, &words) != RSMI_STATUS_SUCCESS)
		words = NULL;
	return gc_amdgpu_status_text(name, words, buf, len);
}
