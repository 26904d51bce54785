/* SPDX-License-Identifier: MIT */
/*
 * What every test binary and lib/ file may need and none should define again:
 * the element count of an array, byte sizes, and rounding up to a multiple.
 * core.h includes it.
 */
#ifndef GPUCONFORM_COMMON_H
#define GPUCONFORM_COMMON_H

#include <stddef.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Byte sizes as size_t, so that products such as 4 * GiB never wrap in int. */
#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

/* x rounded up to a multiple of a (a == 0: x): a VMM size to its granularity, say. */
static inline size_t gc_align_up(size_t x, size_t a)
{
	return a ? (x + a - 1) / a * a : x;
}

#endif
