"""`gpuconform history`: many nights on one page (nights.py reads them,
changes.py finds where a series or a test's state changed, page.py draws
the page)."""
