/* SPDX-License-Identifier: MIT */
/*
 * The session contract's matrices, declared once for every binary that
 * checks it: nvml_session (tests/nvml/session.c) and the AMD management
 * libraries' rsmi_session and amdsmi_session (tests/smi/smi_session.h),
 * whose subtests and dynamic subtest names are nvml_session's. Each binary
 * writes its own body (the calls are its library's); the cases and their
 * names are these.
 */
#ifndef GPUCONFORM_SESSION_CASES_H
#define GPUCONFORM_SESSION_CASES_H

#include "core.h"

/* refcount: k inits, then k shutdowns (a primary context: k retains, then k releases). */
#define GC_SESSION_REFCOUNT_KS 1, 2, 16

/*
 * The refcount matrix: one dynamic subtest per k, `k1`, `k2`, `k16`, in
 * that order. Declares the table and the body
 *     static void body(void *ctx, const unsigned *k);
 * and runs as gc_variants(table, ctx):
 *
 *     GC_SESSION_REFCOUNT_CASES(refcount_ks, refcount_one);
 *     static void refcount_one(void *ctx, const unsigned *k) { ... }
 *     static void test_refcount(void *fx) { gc_variants(refcount_ks, fx); }
 */
#define GC_SESSION_REFCOUNT_CASES(table, body) \
	GC_VARIANTS_F(unsigned, table, body, "k%u", *c) = { GC_SESSION_REFCOUNT_KS }

#endif
