/* SPDX-License-Identifier: MIT */
/*
 * cufile_io's subtests, one source file per group: io.c (data matrix),
 * edge.c (errors and edges), conc.c (lifecycle, races, concurrency, storms,
 * batch and stream-ordered APIs), perf.c (throughput against the reference
 * paths), sustained.c (the soak of write and read back). The fixture's data is a struct cf_env (cf_util.h).
 */
#ifndef GPUCONFORM_CF_IO_H
#define GPUCONFORM_CF_IO_H

#include "cf_util.h"

#include "fastpath_subtests.h"

/* cufile_io's own, beside the shared list. */
void test_error_convention(void *data);
void test_shrinking_file(void *data);
#define CF_EXTRA_SUBTESTS                                                                     \
	{ "error-convention", test_error_convention,                                           \
	  "errors are -1 + the POSIX errno, or a negative CUfileOpError" },                    \
	{ "shrinking-file", test_shrinking_file,                                               \
	  "a file truncated under a registered handle: short, exact reads, no stale bytes" },

/* Shared by the groups. */
#define SEED_A 0xa11ce001u
#define SEED_B 0xb0b00002u

#endif
