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
 * The major and minor of a kernel release as uname(2) gives it ("6.7.0",
 * "6.1.0-18-amd64", "5.14.0-362.el9.x86_64"): 0, or -EINVAL when release
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
 * The rule for a kernel major.minor. The clamp, "drm/amdkfd: Fix shift
 * out-of-bounds issue" (282c1d793076), is in mainline from 6.7 and was
 * backported to stable series before it: from 6.7 only the clamp is
 * promised; before, the clamp or the value as given.
 */
struct gc_svm_gran_rule gc_svm_granularity_rule(unsigned major, unsigned minor, unsigned value);

#endif
