/* SPDX-License-Identifier: MIT */
/*
 * hipfile_io's subtests, one source file per group: io.c (data matrix,
 * fixture, main), edge.c (errors and edges), conc.c (lifecycle, the
 * first-use race, concurrency, storms), batch.c (batch and stream-ordered
 * APIs), perf.c (throughput against the reference paths), sustained.c (the
 * soak of write and read back). The names are cufile_io's wherever the
 * concept exists on AMD. The fixture's data is a struct hf_env (hf_util.h).
 */
#ifndef GPUCONFORM_HF_IO_H
#define GPUCONFORM_HF_IO_H

#include "hf_util.h"

#include "fastpath_subtests.h"

/* size-zero's stream-ordered cases (batch.c). */
void hf_zero_async(struct hf_env *e, bool write);

/* The first-use race's child: a fresh process started by test_first_use_race. */
#define HF_RACE_ENV "GPUCONFORM_HIPFILE_RACE_CHILD"
int hf_race_child(const char *spec);

/* Outcome of one request by the documents, and its check (io.c). */
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
