/* SPDX-License-Identifier: MIT */
/* Between the framework's own files; tests never include this. */
#ifndef GPUCONFORM_CORE_PRIVATE_H
#define GPUCONFORM_CORE_PRIVATE_H

#include "core.h"

#include <stdio.h>

/* Name of the test binary, as the table or argv[0] gives it. */
const char *gc__test_name(void);
/* "exited with status 3", "died of signal 11 (SIGSEGV)"... into buf. */
const char *gc__child_fate(const struct gc_child_status *st, char *buf, size_t len);
/* s as a JSON string (quoted, escaped; NULL as null). */
void gc__json_string(FILE *f, const char *s);
/* buf appended to the metrics file path in one write(2): 0 or -errno. */
int gc__metrics_append(const char *path, const char *buf, size_t len);

#endif
