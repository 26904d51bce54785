"""gpuconform runner: runs the suite's test binaries under pytest.

Modules, from the bottom up:
  protocol  pure parsing of a binary's output (igt_core's line protocol)
  states    result states and the pure classify() of one subtest run
  metrics   validation of the metrics JSON lines a binary appends
  manifest  the manifest files meson writes (one binary a line)
  execute   running one binary: process group, timeout, temp-file output, stray processes
  results   per-test records, results.json and the summary
  jsondoc   JSON files read with one-line errors that name the file, line and field
  gate      the regression gate: from K clean runs, a metric's limit and MDE, or trend only
  baseline  baseline files (one summary per clean run): format, reading, checking, finding
  runmetrics  a run's results.json read back: its metrics, durations and fingerprint
  baseline_update  clean runs made into a baseline, or added to one
  judge     a run's metrics judged against its baseline by the gate
  compare   `gpuconform compare A B`: state changes and sample-level metric deltas
  fmt       numbers and text as the runner prints them (units, percentages, p-values, one line)
  atomic    the one way a file is written: whole or not at all
  options   a run's options: parsed, stored in run.json, given back as arguments; its inputs
  plugin    the pytest plugin (collection, items, recording)
  cli       the `gpuconform` command
"""

__version__ = "0.1.0"
