"""`gpuconform doctor`: what GPU-direct file I/O needs, what this machine
has, and --fix (doctor.py). It imports nothing else of the runner, not even
the run core (runner/tests/test_layers.py checks that it imports no other
product).
"""
