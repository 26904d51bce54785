"""`gpuconform export`: a run's results.json in another format, made on
demand from it: piglit's TestrunResult JSON, as IGT writes it (piglit.py).
Built on the run core (core/: the results read back, the states); it
imports no other product (runner/tests/test_layers.py checks it).
"""
