/* SPDX-License-Identifier: MIT */
/*
 * What every test binary and lib/ file may need and none should define again:
 * the element count of an array, byte sizes, and rounding up to a multiple.
 * core.h includes it.
 */
#ifndef GPUCONFORM_COMMON_H
#define GPUCONFORM_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

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

/*
 * In a function with a printf-style `last, ...`: the variable arguments
 * printed with the format last into buf, len bytes, always terminated (a
 * longer text is cut, as vsnprintf cuts it).
 */
#define GC_VFORMAT(buf, len, last)                                                         \
	do {                                                                               \
		va_list gc_ap_;                                                            \
		va_start(gc_ap_, last);                                                    \
		vsnprintf(buf, len, last, gc_ap_);                                         \
		va_end(gc_ap_);                                                            \
	} while (0)

#endif
