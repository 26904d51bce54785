/* SPDX-License-Identifier: MIT */
/*
 * Compile-time checks that our own declarations of a vendor ABI (gc_*_abi.h)
 * match the vendor's header: sizes, member offsets, constants. Shared by the
 * unit_*_abi tests.
 */
#ifndef GPUCONFORM_ABI_CHECK_H
#define GPUCONFORM_ABI_CHECK_H

#include <stddef.h>

#define SAME_LAYOUT(ours, theirs) \
	_Static_assert(sizeof(ours) == sizeof(theirs), #ours " size differs from " #theirs)
#define SAME_OFFSET(ours, of, theirs, tf)                                      \
	_Static_assert(offsetof(ours, of) == offsetof(theirs, tf),             \
		       #ours "." #of " offset differs from " #theirs "." #tf)
#define SAME_VALUE(ours, theirs) \
	_Static_assert((long)(ours) == (long)(theirs), #ours " != " #theirs)

#endif
