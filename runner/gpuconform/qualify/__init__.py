"""A qualification run's record: built from the run's results.json,
written with its page (templates/), sealed with a content hash and
optionally a GnuPG signature, verified. Built on the run core (core/: the
results read back, the contract table, the page environment and the soak
plots); it imports no other product (runner/tests/test_layers.py checks
it).

  seal         a record sealed: its one written form, content hash, GnuPG signature, verify
  qualify      the qualification record: built from a run, written with its page
"""
