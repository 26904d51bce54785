"""What a run gives its readers, drawn from its results.json: report.html,
one self-contained page (report.py, templates/); the Prometheus text file of
`run --openmetrics` (openmetrics.py); the vendor bundles of `gpuconform
findings` (findings.py, with data/findings' reproducers). Built on the run
core (core/: the page environment, the soak plots, the contract table, the
results read back); it imports no other product (runner/tests/test_layers.py
checks it).
"""
