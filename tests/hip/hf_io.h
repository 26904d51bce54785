/* SPDX-License-Identifier: MIT */
/*
 * hipfile_io's subtests, one source file per group: fastpath.c (data matrix,
 * fixture, main), edge.c (errors and edges), conc.c (lifecycle, the
 * first-use race, concurrency, storms), batch.c (batch and stream-ordered
 * APIs), perf.c (throughput against the reference paths). The names are
 * cufile_io's wherever the concept exists on AMD. The fixture's data is a
 * struct hf_env (hf_util.h).
 */
#ifndef GPUCONFORM_HF_IO_H
#define GPUCONFORM_HF_IO_H

#include "hf_util.h"

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
#define HF_EDGE_SUBTESTS                                                                      \
	{ "size-zero", test_size_zero, "size 0 on every entry point: what each layer does" }, \
	{ "read-across-eof", test_read_across_eof,                                            \
	  "a read across EOF returns the short count and touches nothing past it" },          \
	{ "read-at-eof", test_read_at_eof, "a read at or past EOF returns 0, changes nothing" }, \
	{ "negative-offset", test_negative_offset,                                            \
	  "a negative file or buffer offset is an error that changes nothing" },              \
	{ "write-rdonly", test_write_rdonly,                                                   \
	  "a write through an O_RDONLY descriptor fails, the file unchanged" },              \
	{ "closed-fd", test_closed_fd, "I/O through a descriptor closed before use" },         \
	{ "deregistered-handle", test_deregistered_handle,                                    \
	  "I/O on a deregistered hipFile handle: an error, never a crash or a write" },       \
	{ "host-pointer", test_host_pointer, "host memory where device memory is required" }, \
	{ "non-odirect", test_non_odirect, "a descriptor without O_DIRECT" },                  \
	{ "unlinked-file", test_unlinked_file,                                                 \
	  "an open but unlinked file: same bytes or a named error" },

void test_driver_lifecycle(void *data);
void test_first_use_race(void *data);
void test_concurrent_slices(void *data);
void test_concurrent_readers_writers(void *data);
void test_interrupt_storm(void *data);
#define HF_CONC_SUBTESTS                                                                      \
	{ "driver-lifecycle", test_driver_lifecycle,                                          \
	  "hipFileDriverOpen/Close counting, a close too many, reopen after close" },         \
	{ "first-use-race", test_first_use_race,                                              \
	  "64 threads of a fresh process race to be the first caller of each entry point" },  \
	{ "concurrent-slices", test_concurrent_slices,                                        \
	  "threads read disjoint slices of one file into one device buffer" },                \
	{ "concurrent-readers-writers", test_concurrent_readers_writers,                      \
	  "readers of one file and writers of others at once" },                              \
	{ "interrupt-storm", test_interrupt_storm,                                            \
	  "large reads and writes under a signal storm: exact partial counts, retries converge" },

void test_batch_bad_entry(void *data);
void test_read_async(void *data);
void test_write_async(void *data);
#define HF_BATCH_SUBTESTS                                                                     \
	{ "batch-bad-entry", test_batch_bad_entry,                                            \
	  "a hipFile batch with one bad entry fails that entry alone or is rejected whole" }, \
	{ "read-async", test_read_async, "hipFileReadAsync: stream-ordered, byte-exact" },    \
	{ "write-async", test_write_async, "hipFileWriteAsync: stream-ordered, byte-exact" },

/* size-zero's stream-ordered cases (batch.c). */
void hf_zero_async(struct hf_env *e, bool write);

void test_perf_read(void *data);
void test_perf_write(void *data);
#define HF_PERF_SUBTESTS                                                                      \
	{ "perf-read", test_perf_read,                                                        \
	  "read throughput: fastpath vs O_DIRECT + copy vs O_DIRECT alone" },                 \
	{ "perf-write", test_perf_write,                                                      \
	  "write throughput: fastpath vs copy + O_DIRECT vs O_DIRECT alone" },

/* The first-use race's child: a fresh process started by test_first_use_race. */
#define HF_RACE_ENV "GPUCONFORM_HIPFILE_RACE_CHILD"
int hf_race_child(const char *spec);

/* Outcome of one request by the documents, and its check (fastpath.c). */
enum hf_outcome {
	HF_MUST_TRANSFER, /* every byte, exactly */
	HF_MUST_REFUSE,   /* an error, nothing changed */
	HF_MAY_REFUSE,    /* either of those; which one is recorded */
	HF_ZERO,          /* size 0: 0 or an error, nothing changed */
};
enum hf_outcome hf_expected(enum gc_hf_entry x, uint64_t size, int64_t foff, uintptr_t addr);
/* Fail unless res fits o; the bytes to expect transferred (0 when refused). */
uint64_t hf_judge(enum hf_outcome o, const struct gc_hf_res *res, uint64_t size,
		  const char *desc);

#endif
