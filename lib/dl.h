/* SPDX-License-Identifier: MIT */
/*
 * Run-time libraries (CUDA's, ROCm's): the suite builds without them and
 * skips naming why where they are missing.
 */
#ifndef GPUCONFORM_DL_H
#define GPUCONFORM_DL_H

#include <stddef.h>

/*
 * dlopen the first of names[0..n) that loads, with flags; its name into
 * soname. NULL when none does, with the loader's words for names[0] (the
 * name that should have worked) in why.
 */
void *gc_dlopen_first(const char *const *names, size_t n, int flags, char *soname,
		      size_t soname_len, char *why, size_t why_len);

#endif
