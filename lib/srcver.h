/* SPDX-License-Identifier: MIT */
/*
 * Versions a promise depends on: where the source read changed behaviour at
 * a release, a subtest reads the release it runs on and holds that
 * release's promise. Pure logic (no device), unit-tested in
 * tests/unit/test_srcver.c.
 */
#ifndef GC_SRCVER_H
#define GC_SRCVER_H

#include <stdbool.h>

/*
 * The major and minor of a kernel release as uname(2) gives it (`6.7.0`,
 * `6.1.0-18-amd64`, `5.14.0-362.el9.x86_64`): 0, or -EINVAL when release
 * does not begin with MAJOR.MINOR.
 */
int gc_kernel_release_parse(const char *release, unsigned *major, unsigned *minor);

/* What KFD's SVM granularity attribute reads back as after a SET of value. */
struct gc_svm_gran_rule {
	unsigned clamped;  /* what the clamp gives: min(value, 0x3F) */
	unsigned as_given; /* what a kernel without the clamp stores (the u8 field) */
	bool either;       /* the release may be either: accept both, say which */
	const char *why;   /* the release's promise, one line */
};

/*
 * The rule for a kernel major.minor. The clamp, `drm/amdkfd: Fix shift
 * out-of-bounds issue` (282c1d793076), is in mainline from 6.7 and was
 * backported to stable series before it: from 6.7 only the clamp is
 * promised; before, the clamp or the value as given.
 */
struct gc_svm_gran_rule gc_svm_granularity_rule(unsigned major, unsigned minor, unsigned value);

/*
 * What amdsmi_init / amdsmi_shut_down keep, by the library version that
 * amdsmi_get_lib_version gives (read through the 26.x layout: a 23.x or
 * 24.x library's year reads as major, its major as minor, its minor as
 * release).
 */
enum gc_amdsmi_count {
	GC_AMDSMI_COUNT_NONE,     /* a bool: a second init does nothing, the first shutdown ends */
	GC_AMDSMI_COUNT_UNKNOWN,  /* no source of this version read */
	GC_AMDSMI_COUNT_UNLOCKED, /* a count, changed without a lock around init / cleanup */
};

struct gc_amdsmi_count_rule {
	enum gc_amdsmi_count count;
	const char *why; /* the version range, what its source keeps, where read */
};

/*
 * The rule for a library version. Read: a bool in every ROCm/amdsmi tag
 * from rocm-5.5.0 to 24.7.0 (0ceca28f4139); a count in 26.2.1
 * (paklui/rocm-systems 855bb2203905) and 27.1.0 (amd-vkale/rocm-systems
 * 5d4ce3a988c2). So: 24 and below (years) no count, 26.2.1 on a count,
 * in between (25.x, 26.0.x, 26.1.x, 26.2.0) unknown.
 */
struct gc_amdsmi_count_rule gc_amdsmi_count_rule(unsigned major, unsigned minor,
						 unsigned release);

#endif
