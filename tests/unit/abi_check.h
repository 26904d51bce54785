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

/*
 * SAME_FIELDS(ours, theirs, a, b, ...): SAME_OFFSET for each member (up to 8)
 * that has the same name in both, each named once.
 */
#define SAME_FIELDS(ours, theirs, ...)                                                  \
	ABI__PICK(__VA_ARGS__, ABI__F8, ABI__F7, ABI__F6, ABI__F5, ABI__F4, ABI__F3, ABI__F2, \
		  ABI__F1, )(ours, theirs, __VA_ARGS__)
#define ABI__PICK(_1, _2, _3, _4, _5, _6, _7, _8, name, ...) name
#define ABI__F1(o, t, f) SAME_OFFSET(o, f, t, f)
#define ABI__F2(o, t, f, ...) ABI__F1(o, t, f); ABI__F1(o, t, __VA_ARGS__)
#define ABI__F3(o, t, f, ...) ABI__F1(o, t, f); ABI__F2(o, t, __VA_ARGS__)
#define ABI__F4(o, t, f, ...) ABI__F1(o, t, f); ABI__F3(o, t, __VA_ARGS__)
#define ABI__F5(o, t, f, ...) ABI__F1(o, t, f); ABI__F4(o, t, __VA_ARGS__)
#define ABI__F6(o, t, f, ...) ABI__F1(o, t, f); ABI__F5(o, t, __VA_ARGS__)
#define ABI__F7(o, t, f, ...) ABI__F1(o, t, f); ABI__F6(o, t, __VA_ARGS__)
#define ABI__F8(o, t, f, ...) ABI__F1(o, t, f); ABI__F7(o, t, __VA_ARGS__)

#endif
