"""gpuconform runner: runs the suite's test binaries under pytest.

In layers, each sub-package's modules listed in its own __init__.py:

  cli, plugin  the top: the `gpuconform` command and the pytest plugin (pytest's hooks
               over a run's state; it hands the products' steps to the run's end). They
               may import everything; __main__ runs the command.
  perf         timing: baselines, the regression gate, the judge of a run, compare
  report       report.html
  fleet        merge, and a selection across Slurm GPU nodes
  qualify      the qualification record: built, paged, sealed, verified
  doctor       what GPU-direct file I/O needs, and --fix
  export       results.json in piglit's format
  core         the run core: running, recording and resuming a run, and reading one back

A product imports the core and itself, never another product; the core imports
nothing above it; this module imports nothing (runner/tests/test_layers.py).
"""

__version__ = "0.1.0"
