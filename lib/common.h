/* SPDX-License-Identifier: MIT */
/*
 * What every test binary and lib/ file may need and none should define again:
 * the element count of an array, and byte sizes. core.h includes it.
 */
#ifndef GPUCONFORM_COMMON_H
#define GPUCONFORM_COMMON_H

#include <stddef.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Byte sizes as size_t, so that products such as 4 * GiB never wrap in int. */
#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

#endif
