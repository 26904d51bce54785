"""`gpuconform history`: many nights on one page (nights.py reads them,
changes.py finds where a series or a test's state changed, page.py draws
the page). Built on the run core (core/: results read back, the
fingerprint, the page environment); it imports no other product
(runner/tests/test_layers.py checks it).
"""
