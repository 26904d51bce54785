/* SPDX-License-Identifier: MIT */
/*
 * <linux/kfd_ioctl.h> starts with #include <drm/drm.h>. Debian's
 * linux-libc-dev ships no drm/ directory; libdrm-dev ships the same DRM UAPI
 * header as <drm.h> (its pkg-config include directory). lib/kfd/meson.build
 * puts this directory on the include path only when <drm/drm.h> is missing.
 */
#include <drm.h>
