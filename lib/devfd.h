/* SPDX-License-Identifier: MIT */
/*
 * Which device nodes this process holds open, from /proc/self/fd: for leak
 * checks (a driver library that keeps /dev/nvidia* or /dev/kfd open after its
 * last shutdown) and session tests.
 */
#ifndef GPUCONFORM_DEVFD_H
#define GPUCONFORM_DEVFD_H

#include <stddef.h>

/* Number of open fds whose target path starts with prefix (`/dev/nvidia`), or -errno. */
int gc_devfd_count(const char *prefix);

/*
 * `3:/dev/nvidiactl 5:/dev/nvidia0` for those fds into buf (truncated to
 * len, always terminated); the count, or -errno.
 */
int gc_devfd_list(const char *prefix, char *buf, size_t len);

#endif
