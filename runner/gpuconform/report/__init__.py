"""report.html: one self-contained page of a run, drawn from its
results.json (report.py, templates/). Built on the run core (core/: the
page environment, the soak plots, the contract table, the results read
back); it imports no other product (runner/tests/test_layers.py checks it).
"""
