/* SPDX-License-Identifier: MIT */
/*
 * What a subtest made and has not given back yet, for a stack whose calls
 * can leave more records than gc_defer() holds (stress-10k maps thousands
 * of pieces; GC_DEFER_MAX is 64): each call that made something records it,
 * each call that gave it back forgets it, and what a failed subtest left is
 * given back kind by kind in the stack's order (mappings before the
 * reservations they lie in, those before the handles behind them), within a
 * kind from the last record to the first (a forgotten record's place goes to
 * the last one), a refusal only warned about. Addresses and handles
 * travel as uint64_t, as in lib/contract/mem.h.
 *
 *     struct gc_ledger l = { .give = my_give, .strerror = my_strerror, .ctx = my,
 *                            .n_kinds = MY_KINDS, .what = MY_WORDS };
 *     after a call made va:    gc_ledger_hold(&l, MY_RANGE, va, size);
 *     after it gave va back:   gc_ledger_forget(&l, MY_RANGE, va);
 *     after_each, teardown:    gc_ledger_give_back(&l);
 *     teardown, last:          gc_ledger_free(&l);
 */
#ifndef GPUCONFORM_LEDGER_H
#define GPUCONFORM_LEDGER_H

#include <stddef.h>
#include <stdint.h>

struct gc_held {
	unsigned kind; /* the stack's: given back in increasing order */
	uint64_t key;  /* an address, or a handle */
	size_t size;   /* for the calls that take one (unmap, address free) */
};

struct gc_ledger {
	/* Gives e back: 0, or the stack's status, printed with strerror(). */
	int (*give)(void *ctx, const struct gc_held *e);
	const char *(*strerror)(void *ctx, int status, char *buf, size_t len);
	void *ctx;
	unsigned n_kinds;
	const char *what; /* in `giving back N <what> the subtest left` */
	struct gc_held *v;
	size_t n, cap;
};

/* Records (kind, key, size); out of memory fails the subtest. */
void gc_ledger_hold(struct gc_ledger *l, unsigned kind, uint64_t key, size_t size);
/* Forgets the newest record of (kind, key), if there is one. */
void gc_ledger_forget(struct gc_ledger *l, unsigned kind, uint64_t key);
/* Gives back every record (see above) and forgets them all; how many there were. */
size_t gc_ledger_give_back(struct gc_ledger *l);
/* Gives back what is left, then frees the records' memory. */
void gc_ledger_free(struct gc_ledger *l);

#endif
