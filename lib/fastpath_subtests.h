/* SPDX-License-Identifier: MIT */
/*
 * The fastpath contract's subtests, shared by cufile_io and hipfile_io: one
 * list of names and descriptions, so both binaries have the same subtests
 * by construction (each defines every test_* below; a binary adds its own
 * extra entries, e.g. cufile_io's error-convention). Each binary's file
 * comments say how its library meets each contract.
 */
#ifndef GPUCONFORM_FASTPATH_SUBTESTS_H
#define GPUCONFORM_FASTPATH_SUBTESTS_H

void test_read_matrix(void *data);
void test_write_matrix(void *data);
void test_registered_matrix(void *data);
void test_read_registered_subrange(void *data);
#define GC_FASTPATH_MATRIX_SUBTESTS                                                            \
	{ "read-matrix", test_read_matrix,                                                     \
	  "every size x file offset x buffer offset read byte-exact, guards untouched" },      \
	{ "write-matrix", test_write_matrix,                                                   \
	  "every size x file offset x buffer offset written byte-exact, the rest untouched" }, \
	{ "registered-matrix", test_registered_matrix,                                         \
	  "a registered buffer gives the same bytes as an unregistered one" },                 \
	{ "read-registered-subrange", test_read_registered_subrange,                           \
	  "a read into the middle of a registered allocation lands exactly there" },

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
#define GC_FASTPATH_EDGE_SUBTESTS                                                              \
	{ "size-zero", test_size_zero, "size 0 on every entry point: what each layer does" },  \
	{ "read-across-eof", test_read_across_eof,                                             \
	  "a read across EOF returns the short count and changes nothing outside the request" }, \
	{ "read-at-eof", test_read_at_eof, "a read at or past EOF returns 0, changes nothing" }, \
	{ "negative-offset", test_negative_offset,                                             \
	  "a negative file or buffer offset is an error that changes nothing" },               \
	{ "write-rdonly", test_write_rdonly,                                                    \
	  "a write through an O_RDONLY descriptor fails, the file unchanged" },               \
	{ "closed-fd", test_closed_fd, "I/O through a descriptor closed after registration" },  \
	{ "deregistered-handle", test_deregistered_handle,                                     \
	  "I/O on a deregistered handle: an error, never a crash or a write" },                \
	{ "host-pointer", test_host_pointer, "host memory where device memory is expected" },  \
	{ "non-odirect", test_non_odirect, "a descriptor without O_DIRECT" },                   \
	{ "unlinked-file", test_unlinked_file,                                                  \
	  "an open but unlinked file: the same bytes or a named error" },

void test_driver_lifecycle(void *data);
void test_first_use_race(void *data);
void test_concurrent_slices(void *data);
void test_concurrent_readers_writers(void *data);
void test_interrupt_storm(void *data);
#define GC_FASTPATH_CONC_SUBTESTS                                                              \
	{ "driver-lifecycle", test_driver_lifecycle,                                           \
	  "driver open/close counting, a close too many, reopen after close" },                \
	{ "first-use-race", test_first_use_race,                                               \
	  "64 threads of a fresh process race to be the library's first caller" },             \
	{ "concurrent-slices", test_concurrent_slices,                                         \
	  "threads read disjoint slices of one file into one device buffer" },                 \
	{ "concurrent-readers-writers", test_concurrent_readers_writers,                       \
	  "readers of one file and writers of another at once" },                              \
	{ "interrupt-storm", test_interrupt_storm,                                             \
	  "large reads and writes under a signal storm: exact partial counts, retries converge" },

void test_batch_bad_entry(void *data);
void test_read_async(void *data);
void test_write_async(void *data);
#define GC_FASTPATH_BATCH_SUBTESTS                                                             \
	{ "batch-bad-entry", test_batch_bad_entry,                                             \
	  "a batch with one bad entry fails that entry alone or is rejected whole" },          \
	{ "read-async", test_read_async, "stream-ordered reads: byte-exact" },                   \
	{ "write-async", test_write_async, "stream-ordered writes: byte-exact" },

void test_perf_read(void *data);
void test_perf_write(void *data);
#define GC_FASTPATH_PERF_SUBTESTS                                                              \
	{ "perf-read", test_perf_read,                                                         \
	  "read throughput: fastpath vs O_DIRECT + copy vs O_DIRECT alone" },                  \
	{ "perf-write", test_perf_write,                                                       \
	  "write throughput: fastpath vs copy + O_DIRECT vs O_DIRECT alone" },

#endif
