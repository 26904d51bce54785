/* SPDX-License-Identifier: MIT */
/*
 * cufile_io's subtests, one source file per group: io.c (data matrix),
 * edge.c (errors and edges), conc.c (lifecycle, races, concurrency, storms,
 * batch and stream-ordered APIs), perf.c (throughput against the reference
 * paths). The fixture's data is a struct cf_env (cf_util.h).
 */
#ifndef GPUCONFORM_CF_IO_H
#define GPUCONFORM_CF_IO_H

#include "cf_util.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void test_size_zero(void *data);
void test_read_across_eof(void *data);
void test_read_at_eof(void *data);
void test_negative_offset(void *data);
void test_write_rdonly(void *data);
void test_closed_fd(void *data);
void test_deregistered_handle(void *data);
void test_host_pointer(void *data);
void test_non_odirect(void *data);
void test_unlinked_file(void *data);
void test_error_convention(void *data);
#define CF_EDGE_SUBTESTS                                                                      \
	{ "size-zero", test_size_zero, "size 0 on every entry point: what each layer does" }, \
	{ "read-across-eof", test_read_across_eof,                                            \
	  "a read across EOF returns the short count and touches nothing past it" },          \
	{ "read-at-eof", test_read_at_eof, "a read at or past EOF returns 0, changes nothing" }, \
	{ "negative-offset", test_negative_offset,                                            \
	  "a negative file or buffer offset is an error that changes nothing" },              \
	{ "write-rdonly", test_write_rdonly,                                                   \
	  "a write through an O_RDONLY descriptor fails, the file unchanged" },              \
	{ "closed-fd", test_closed_fd, "I/O on a registered handle whose fd was closed" },    \
	{ "deregistered-handle", test_deregistered_handle,                                    \
	  "I/O on a deregistered handle: an error, never a crash or a write" },               \
	{ "host-pointer", test_host_pointer, "host memory where device memory is expected" }, \
	{ "non-odirect", test_non_odirect, "a descriptor without O_DIRECT" },                  \
	{ "unlinked-file", test_unlinked_file, "an open but unlinked file: handle or named error" }, \
	{ "error-convention", test_error_convention,                                           \
	  "errors are -1 + the POSIX errno, or a negative CUfileOpError" },

void test_driver_lifecycle(void *data);
void test_first_use_race(void *data);
void test_concurrent_slices(void *data);
void test_concurrent_readers_writers(void *data);
void test_interrupt_storm(void *data);
void test_batch_bad_entry(void *data);
void test_read_async(void *data);
void test_write_async(void *data);
#define CF_CONC_SUBTESTS                                                                      \
	{ "driver-lifecycle", test_driver_lifecycle,                                          \
	  "cuFileDriverOpen/Close counting, a close too many, reopen after close" },          \
	{ "first-use-race", test_first_use_race,                                              \
	  "64 threads of a fresh process race to be the first cuFile caller" },               \
	{ "concurrent-slices", test_concurrent_slices,                                        \
	  "threads read disjoint slices of one file into one device buffer" },                \
	{ "concurrent-readers-writers", test_concurrent_readers_writers,                      \
	  "readers of one file and writers of another at once" },                             \
	{ "interrupt-storm", test_interrupt_storm,                                            \
	  "large reads and writes under a signal storm: exact partial counts, retries converge" }, \
	{ "batch-bad-entry", test_batch_bad_entry,                                            \
	  "a batch with one bad entry fails that entry alone or is rejected whole" },         \
	{ "read-async", test_read_async, "cuFileReadAsync: stream-ordered, byte-exact" },     \
	{ "write-async", test_write_async, "cuFileWriteAsync: stream-ordered, byte-exact" },

void test_perf_read(void *data);
void test_perf_write(void *data);
#define CF_PERF_SUBTESTS                                                                      \
	{ "perf-read", test_perf_read,                                                        \
	  "read throughput: fastpath vs O_DIRECT + copy vs O_DIRECT alone" },                 \
	{ "perf-write", test_perf_write,                                                      \
	  "write throughput: fastpath vs copy + O_DIRECT vs O_DIRECT alone" },

/* Shared by the groups. */
#define SEED_A 0xa11ce001u
#define SEED_B 0xb0b00002u

#endif
