/* SPDX-License-Identifier: MIT */
/* Between the framework's own files; tests never include this. */
#ifndef GPUCONFORM_CORE_PRIVATE_H
#define GPUCONFORM_CORE_PRIVATE_H

#include "core.h"

#include <stdio.h>

/* Name of the test binary, as the table or argv[0] gives it. */
const char *gc__test_name(void);
/* `exited with status 3`, `died of signal 11 (SIGSEGV)`... into buf. */
const char *gc__child_fate(const struct gc_child_status *st, char *buf, size_t len);
/* s as a JSON string (quoted, escaped; NULL as null). */
void gc__json_string(FILE *f, const char *s);
/*
 * One line of the metrics file: a JSON object whose first members test,
 * subtest and dynamic name the running subtest, then what body writes (each
 * further member with its leading comma, up to the closing brace and
 * newline), appended to path in one write(2): 0 or -errno.
 */
int gc__metrics_line(const char *path, void (*body)(FILE *f, const void *arg), const void *arg);

#endif
