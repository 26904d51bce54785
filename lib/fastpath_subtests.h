/* SPDX-License-Identifier: MIT */
/*
 * The fastpath contract's subtests, shared by cufile_io and hipfile_io: one
 * list of names and descriptions, so both binaries have the same subtests
 * by construction (each defines every test_* below; a binary adds its own
 * extra entries, e.g. cufile_io's error-convention). The same goes for the
 * cases of the matrices both binaries run (the data matrices, the kinds of
 * bad batch entry): declared here once, so their dynamic subtests have the
 * same names on both. Each binary's file comments say how its library meets
 * each contract.
 */
#ifndef GPUCONFORM_FASTPATH_SUBTESTS_H
#define GPUCONFORM_FASTPATH_SUBTESTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"

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

/*
 * The data matrices' cases, the same in both binaries: every size x (file
 * offset, buffer offset), a dynamic subtest each, named s<size>-f<foff>-b<boff>
 * (`s4097-f1m1-b1`); registered-matrix takes four sizes and three file
 * offsets, reads then writes, named with the direction in front
 * (`read-s4096-f0-b0`). Sizes outermost, buffer offsets innermost.
 *
 *     GC_FASTPATH_MATRICES(read_one, write_one, registered_one);
 *     static void read_one(void *ctx, const struct gc_fp_size *a,
 *                          const struct gc_fp_place *b) { ... }
 *     static void registered_one(void *ctx, const struct gc_fp_dir_size *a,
 *                                const struct gc_fp_place *b) { ... }
 *     void test_read_matrix(void *data) { ... gc_product(gc_fp_read_matrix, ctx); }
 *
 * declares the tables and the three bodies, and defines the matrices
 * gc_fp_read_matrix, gc_fp_write_matrix and gc_fp_registered_matrix.
 */
#define GC_FP_MATRIX_MAX_SIZE (256 * MiB) /* largest size of the matrix */
#define GC_FP_MATRIX_MAX_FOFF (MiB + 1)   /* largest file offset of the matrix */

struct gc_fp_size {
	const char *name; /* in the case's name: `64k` */
	uint64_t size;
};
struct gc_fp_dir_size {
	const char *dir;  /* `read-` / `write-` */
	bool write;
	const char *name;
	uint64_t size;
};
struct gc_fp_place {
	const char *foff_name; /* `1m1` */
	uint64_t foff, boff;
};

#define GC_FP__PLACES(name, foff) { name, foff, 0 }, { name, foff, 1 }, { name, foff, 4096 }
#define GC_FP__REGISTERED_SIZES(dir, write)                                                    \
	{ dir, write, "4096", 4096 }, { dir, write, "4097", 4097 },                            \
	{ dir, write, "64k", 64 * KiB }, { dir, write, "1m4k", MiB + 4 * KiB }
#define GC_FP__CASE_NAME "s%s-f%s-b%llu", a->name, b->foff_name, (unsigned long long)b->boff

#define GC_FASTPATH_MATRICES(read_body, write_body, registered_body)                           \
	static const struct gc_fp_size gc_fp_sizes[] = {                                       \
		{ "0", 0 }, { "1", 1 }, { "4095", 4095 }, { "4096", 4096 }, { "4097", 4097 },  \
		{ "64k", 64 * KiB }, { "1m4k", MiB + 4 * KiB }, { "256m", GC_FP_MATRIX_MAX_SIZE }, \
	};                                                                                     \
	static const struct gc_fp_place gc_fp_places[] = {                                     \
		GC_FP__PLACES("0", 0), GC_FP__PLACES("512", 512), GC_FP__PLACES("4096", 4096), \
		GC_FP__PLACES("1m1", GC_FP_MATRIX_MAX_FOFF),                                   \
	};                                                                                     \
	static const struct gc_fp_dir_size gc_fp_registered_sizes[] = {                        \
		GC_FP__REGISTERED_SIZES("read-", false), GC_FP__REGISTERED_SIZES("write-", true), \
	};                                                                                     \
	static const struct gc_fp_place gc_fp_registered_places[] = {                          \
		GC_FP__PLACES("0", 0), GC_FP__PLACES("4096", 4096),                            \
		GC_FP__PLACES("1m1", GC_FP_MATRIX_MAX_FOFF),                                   \
	};                                                                                     \
	GC_PRODUCT_F(gc_fp_read_matrix, struct gc_fp_size, gc_fp_sizes, struct gc_fp_place,    \
		     gc_fp_places, read_body, GC_FP__CASE_NAME);                               \
	GC_PRODUCT_F(gc_fp_write_matrix, struct gc_fp_size, gc_fp_sizes, struct gc_fp_place,   \
		     gc_fp_places, write_body, GC_FP__CASE_NAME);                              \
	GC_PRODUCT_F(gc_fp_registered_matrix, struct gc_fp_dir_size, gc_fp_registered_sizes,   \
		     struct gc_fp_place, gc_fp_registered_places, registered_body,             \
		     "%ss%s-f%s-b%llu", a->dir, a->name, b->foff_name, (unsigned long long)b->boff)

/*
 * The three data matrices over one body per case: body(ctx, write, size,
 * place) for every case of read-matrix (write false), write-matrix (true)
 * and registered-matrix (its case's direction); the stack's ctx says which
 * matrix runs where that matters (a registered buffer).
 *
 *     GC_FASTPATH_MATRIX(case_one);
 *     static void case_one(void *ctx, bool write, uint64_t size,
 *                          const struct gc_fp_place *b) { ... }
 */
#define GC_FASTPATH_MATRIX(body)                                                               \
	static void body(void *ctx, bool write, uint64_t size, const struct gc_fp_place *b);   \
	static void gc_fp__read_one(void *ctx, const struct gc_fp_size *a,                     \
				    const struct gc_fp_place *b)                               \
	{                                                                                      \
		body(ctx, false, a->size, b);                                                  \
	}                                                                                      \
	static void gc_fp__write_one(void *ctx, const struct gc_fp_size *a,                    \
				     const struct gc_fp_place *b)                              \
	{                                                                                      \
		body(ctx, true, a->size, b);                                                   \
	}                                                                                      \
	static void gc_fp__registered_one(void *ctx, const struct gc_fp_dir_size *a,           \
					  const struct gc_fp_place *b)                         \
	{                                                                                      \
		body(ctx, a->write, a->size, b);                                               \
	}                                                                                      \
	GC_FASTPATH_MATRICES(gc_fp__read_one, gc_fp__write_one, gc_fp__registered_one)

/*
 * A list of {name, body} pairs as a GC_VARIANTS table (size-zero's cases):
 * each case is the dynamic subtest name, running fn(ctx).
 *
 *     GC_FASTPATH_NAMED(zero_cases) = { { read_name, zero_read }, ... };
 *     ... gc_variants(zero_cases, ctx);
 *
 * (read_name: the string literal `read`.)
 */
struct gc_fp_named {
	const char *name;
	void (*fn)(void *ctx);
};
static inline void gc_fp_named_run(void *ctx, const struct gc_fp_named *c)
{
	c->fn(ctx);
}
#define GC_FASTPATH_NAMED(table) GC_VARIANTS(struct gc_fp_named, table, gc_fp_named_run)

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

/*
 * batch-bad-entry's cases, the same in both binaries: one dynamic subtest
 * per kind of bad entry, named by it. Each binary makes the bad entry its
 * own way (e.g. closed-handle: a handle whose descriptor was closed, or one
 * deregistered).
 *
 *     GC_FASTPATH_BAD_ENTRIES(bad_one);
 *     static void bad_one(void *ctx, const struct gc_fp_bad_case *c) { ... c->kind ... }
 *     ... gc_variants(gc_fp_bad_entries, ctx);
 */
enum gc_fp_bad_kind {
	GC_FP_BAD_NEGATIVE_OFFSET,
	GC_FP_BAD_PAST_EOF,
	GC_FP_BAD_ODD_SIZE,
	GC_FP_BAD_CLOSED_HANDLE,
};
struct gc_fp_bad_case {
	const char *name;
	enum gc_fp_bad_kind kind;
};
#define GC_FASTPATH_BAD_ENTRIES(body)                                                          \
	GC_VARIANTS(struct gc_fp_bad_case, gc_fp_bad_entries, body) = {                        \
		{ "negative-offset", GC_FP_BAD_NEGATIVE_OFFSET },                              \
		{ "past-eof", GC_FP_BAD_PAST_EOF },                                            \
		{ "odd-size", GC_FP_BAD_ODD_SIZE },                                            \
		{ "closed-handle", GC_FP_BAD_CLOSED_HANDLE },                                  \
	}

void test_batch_bad_entry(void *data);
void test_read_async(void *data);
void test_write_async(void *data);
#define GC_FASTPATH_BATCH_SUBTESTS                                                             \
	{ "batch-bad-entry", test_batch_bad_entry,                                             \
	  "a batch with one bad entry fails that entry alone or is rejected whole" },          \
	{ "read-async", test_read_async, "stream-ordered reads: byte-exact" },                   \
	{ "write-async", test_write_async, "stream-ordered writes: byte-exact" },

/*
 * sustained: a soak (lib/soak.h). Each cycle writes GC_FP_SUSTAINED_BYTES of
 * a pattern (a new one each cycle) from device memory to a scratch file and
 * reads them back into another device buffer, byte-exact; GC_FP_SUSTAINED
 * cycles at level standard, GC_FP_SUSTAINED_QUICK at quick, as many as fit
 * at long; host memory, fds, device memory in use and the time per cycle
 * must not grow. Each binary's .soaks lists GC_FASTPATH_SOAKS.
 */
#define GC_FP_SUSTAINED_BYTES (16 * MiB)
#define GC_FP_SUSTAINED 200
#define GC_FP_SUSTAINED_QUICK 20
void test_sustained(void *data);
#define GC_FASTPATH_SOAK_SUBTESTS                                                              \
	{ "sustained", test_sustained,                                                         \
	  "16 MiB written from device memory and read back into another, cycle after cycle: "  \
	  "byte-exact, nothing grows" },
#define GC_FASTPATH_SOAKS "sustained"

void test_perf_read(void *data);
void test_perf_write(void *data);
#define GC_FASTPATH_PERF_SUBTESTS                                                              \
	{ "perf-read", test_perf_read,                                                         \
	  "read throughput: fastpath vs O_DIRECT + copy vs O_DIRECT alone" },                  \
	{ "perf-write", test_perf_write,                                                       \
	  "write throughput: fastpath vs copy + O_DIRECT vs O_DIRECT alone" },

/*
 * A binary's tables, the same in both: subtests (each group above, in one
 * order; extra, a list of a binary's own entries or nothing, after the edge
 * cases), soaks, and placements. The throughput subtests run alone, one GPU
 * after another: the copies on other GPUs share the node's disk (on four
 * H200s cufile_io's write ratio fell by half, and varied threefold between
 * GPUs).
 *
 *     GC_FASTPATH_TABLES(CF_EXTRA_SUBTESTS);
 *     GC_MAIN(..., .subtests = subtests, .soaks = soaks, .placements = placements)
 */
#define GC_FASTPATH_TABLES(extra)                                                              \
	static const struct gc_subtest subtests[] = {                                          \
		GC_FASTPATH_MATRIX_SUBTESTS                                                    \
		GC_FASTPATH_EDGE_SUBTESTS                                                      \
		extra                                                                          \
		GC_FASTPATH_CONC_SUBTESTS                                                      \
		GC_FASTPATH_BATCH_SUBTESTS                                                     \
		GC_FASTPATH_PERF_SUBTESTS                                                      \
		GC_FASTPATH_SOAK_SUBTESTS                                                      \
		{ 0 }                                                                          \
	};                                                                                     \
	static const char *const soaks[] = { GC_FASTPATH_SOAKS, NULL };                        \
	static const struct gc_placement_rule placements[] = {                                 \
		{ "perf-read", GC_PLACE_GPU_ALONE },                                           \
		{ "perf-write", GC_PLACE_GPU_ALONE },                                          \
		{ 0 }                                                                          \
	}

#endif
