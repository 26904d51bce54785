/* SPDX-License-Identifier: MIT */
/* Between the framework's own files; tests never include this. */
#ifndef GPUCONFORM_CORE_PRIVATE_H
#define GPUCONFORM_CORE_PRIVATE_H

#include "core.h"

/* Name of the test binary, as the table or argv[0] gives it. */
const char *gc__test_name(void);
/* "exited with status 3", "died of signal 11 (SIGSEGV)"... into buf. */
const char *gc__child_fate(const struct gc_child_status *st, char *buf, size_t len);

#endif
