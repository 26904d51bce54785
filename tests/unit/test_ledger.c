// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/ledger: a made-up stack whose give-back writes down
 * what it was given, and refuses the key the test names, so the order, the
 * forgetting and a refusal are checked without a device.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "ledger.h"

enum { MAP, RANGE, HANDLE, KINDS };

#define MAX_GIVEN 2048

/* The fixture: the fake stack and its ledger, both fresh before each subtest. */
struct fake {
	struct gc_ledger l;
	struct gc_held given[MAX_GIVEN];
	size_t n_given;
	uint64_t refuse; /* this key's give-back returns 7 (0: none refused) */
};

static int fake_give(void *ctx, const struct gc_held *e)
{
	struct fake *f = ctx;

	gc_assert_cmpuint(f->n_given, <, MAX_GIVEN);
	f->given[f->n_given++] = *e;
	return e->key == f->refuse ? 7 : 0;
}

static const char *fake_strerror(void *ctx, int status, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "status %d", status);
	return buf;
}

static void *fake_setup(void)
{
	struct fake *f = malloc(sizeof(*f));

	gc_assert(f);
	return f;
}

static void fake_reset(void *data)
{
	struct fake *f = data;

	memset(f, 0, sizeof(*f));
	f->l = (struct gc_ledger){ .give = fake_give, .strerror = fake_strerror, .ctx = f,
				   .n_kinds = KINDS, .what = "fake resources" };
}

static void fake_after(void *data)
{
	gc_ledger_free(&((struct fake *)data)->l);
}

static const struct gc_fixture fixture = {
	.setup = fake_setup, .teardown = free, .before_each = fake_reset, .after_each = fake_after,
};

static void hold_all(struct fake *f, const struct gc_held *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gc_ledger_hold(&f->l, r[i].kind, r[i].key, r[i].size);
}

/* Given back exactly want, in its order; the ledger is then empty. */
static void expect_given(const struct fake *f, const struct gc_held *want, size_t n)
{
	gc_assert_eq_uint(f->n_given, n);
	for (size_t i = 0; i < n; i++) {
		gc_assert_eq_uint(f->given[i].kind, want[i].kind);
		gc_assert_eq_uint(f->given[i].key, want[i].key);
		gc_assert_eq_uint(f->given[i].size, want[i].size);
	}
	gc_assert_eq_uint(f->l.n, 0);
}

/* Kind by kind in the stack's order, within a kind from the last record. */
static void test_order(void *data)
{
	static const struct gc_held in[] = {
		{ HANDLE, 0x10, 0 }, { RANGE, 0x1000, 4096 }, { MAP, 0x1000, 2048 },
		{ MAP, 0x1800, 2048 }, { HANDLE, 0x11, 0 },
	};
	static const struct gc_held out[] = {
		{ MAP, 0x1800, 2048 }, { MAP, 0x1000, 2048 }, { RANGE, 0x1000, 4096 },
		{ HANDLE, 0x11, 0 }, { HANDLE, 0x10, 0 },
	};
	struct fake *f = data;

	hold_all(f, in, ARRAY_SIZE(in));
	gc_assert_eq_uint(gc_ledger_give_back(&f->l), ARRAY_SIZE(in));
	expect_given(f, out, ARRAY_SIZE(out));
	gc_assert_eq_uint(gc_ledger_give_back(&f->l), 0); /* nothing twice */
	gc_assert_eq_uint(f->n_given, ARRAY_SIZE(out));
}

/* Forgetting takes the newest record of that kind and key, and nothing else. */
static void test_forget(void *data)
{
	static const struct gc_held in[] = {
		{ MAP, 0x2000, 1 }, { RANGE, 0x2000, 2 }, { MAP, 0x2000, 3 },
	};
	static const struct gc_held out[] = { { MAP, 0x2000, 1 }, { RANGE, 0x2000, 2 } };
	struct fake *f = data;

	hold_all(f, in, ARRAY_SIZE(in));
	gc_ledger_forget(&f->l, MAP, 0x2000);    /* the size-3 record */
	gc_ledger_forget(&f->l, HANDLE, 0x2000); /* no such kind: nothing */
	gc_ledger_forget(&f->l, MAP, 0x9999);    /* no such key: nothing */
	gc_assert_eq_uint(gc_ledger_give_back(&f->l), ARRAY_SIZE(out));
	expect_given(f, out, ARRAY_SIZE(out));
}

/* More records than one allocation holds; a refusal is warned about, the rest given back. */
static void test_many_and_refused(void *data)
{
	struct fake *f = data;

	for (uint64_t i = 1; i <= 1000; i++)
		gc_ledger_hold(&f->l, i % 2 ? MAP : RANGE, i, (size_t)i);
	for (uint64_t i = 1; i <= 1000; i += 4)
		gc_ledger_forget(&f->l, MAP, i);
	f->refuse = 3;
	gc_assert_eq_uint(gc_ledger_give_back(&f->l), 750);
	gc_assert_eq_uint(f->n_given, 750);
	for (size_t i = 0; i < 750; i++)
		gc_assert_eq_uint(f->given[i].kind, i < 250 ? MAP : RANGE);
	gc_assert_eq_uint(f->l.n, 0);
}

/* gc_ledger_free() gives back what is left first, and frees the records. */
static void test_free_gives_back(void *data)
{
	static const struct gc_held in[] = { { RANGE, 0x3000, 8 } };
	struct fake *f = data;

	hold_all(f, in, ARRAY_SIZE(in));
	gc_ledger_free(&f->l);
	expect_given(f, in, ARRAY_SIZE(in));
	gc_assert(f->l.v == NULL && f->l.cap == 0);
}

static const struct gc_subtest subtests[] = {
	{ "order", test_order, "kind by kind, the last record of a kind first" },
	{ "forget", test_forget, "forgetting takes the newest record of its kind and key" },
	{ "many-and-refused", test_many_and_refused,
	  "a thousand records; a refused give-back warned about, the rest given back" },
	{ "free-gives-back", test_free_gives_back, "free gives back what is left" },
	{ 0 }
};

GC_MAIN(.name = "unit_ledger", .description = "lib/ledger: what a subtest holds, given back",
	.subtests = subtests, .fixture = &fixture)
