// SPDX-License-Identifier: MIT
/* What a subtest holds, given back in the stack's order. See ledger.h. */
#include "ledger.h"
#include "core.h"

#include <stdlib.h>

void gc_ledger_hold(struct gc_ledger *l, unsigned kind, uint64_t key, size_t size)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct gc_held *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			gc_fail("out of host memory recording %zu %s", cap, l->what);
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct gc_held){ kind, key, size };
}

/* Searched from the newest: undoing in reverse order finds it at once. */
void gc_ledger_forget(struct gc_ledger *l, unsigned kind, uint64_t key)
{
	for (size_t i = l->n; i-- > 0;) {
		if (l->v[i].kind == kind && l->v[i].key == key) {
			l->v[i] = l->v[--l->n];
			return;
		}
	}
}

size_t gc_ledger_give_back(struct gc_ledger *l)
{
	size_t n = l->n;
	char err[160];

	if (!n)
		return 0;
	gc_info("giving back %zu %s the subtest left", n, l->what);
	for (unsigned kind = 0; kind < l->n_kinds; kind++) {
		for (size_t i = n; i-- > 0;) {
			const struct gc_held *e = &l->v[i];
			int r;

			if (e->kind != kind)
				continue;
			r = l->give(l->ctx, e);
			if (r)
				gc_warn("giving back resource kind %u at %#llx: %s", kind,
					(unsigned long long)e->key,
					l->strerror(l->ctx, r, err, sizeof(err)));
		}
	}
	l->n = 0;
	return n;
}

void gc_ledger_free(struct gc_ledger *l)
{
	gc_ledger_give_back(l);
	free(l->v);
	l->v = NULL;
	l->cap = 0;
}
