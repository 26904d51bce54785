/* SPDX-License-Identifier: MIT */
/*
 * The sizes and counts of the VMM memory contract, declared once for its
 * twins on both vendors: cuda_mem (tests/cuda/mem.c) and hip_mem
 * (tests/hip/mem.c), so that their results and their latency metrics
 * (<op>-2MiB, <op>-1GiB) compare like with like.
 */
#ifndef GPUCONFORM_VMM_CASES_H
#define GPUCONFORM_VMM_CASES_H

#include "common.h"

#define GC_VMM_LEAK_SLACK 0              /* free-memory bytes per device the leak check tolerates */
#define GC_VMM_LIFECYCLE_SIZE (64 * MiB)
#define GC_VMM_STRESS_N 10000            /* stress-10k: mappings in one reservation */
#define GC_VMM_STRESS_MARGIN GiB         /* free memory kept beyond the stress mappings */
#define GC_VMM_LAT_SMALL (2 * MiB)       /* latency: <op>-2MiB */
#define GC_VMM_LAT_SMALL_REPS 50
#define GC_VMM_LAT_LARGE GiB             /* latency: <op>-1GiB */
#define GC_VMM_LAT_LARGE_REPS 10

#endif
