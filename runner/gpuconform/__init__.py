"""gpuconform runner: runs the suite's test binaries under pytest.

Modules, one job each, from the bottom up:
  atomic       the one way a file is written: whole or not at all
  fmt          numbers and text as the runner prints them (units, percentages, p-values, one line)
  jsondoc      JSON files read with one-line errors that name the file, line and field
  stats        robust statistics of timing samples: median, MAD, Mann-Whitney U, shifts
  protocol     pure parsing of a binary's output (igt_core's line protocol)
  states       result states and the pure classification of one subtest run
  metrickey    a metric's name rule and its key (BIN@SUB[@DYN]:NAME[ [NODE]]): made and read back
  metrics      validation of the metrics JSON lines a binary appends
  soak         validation of the soak lines (leak and drift series) a binary appends
  manifest     the manifest files meson writes (one binary a line)
  testlist     test lists: which BINARY@SUBTEST tests a run selects
  contracts    the contract table: which subtests check one contract on each vendor, and why a twin is missing
  shard        one selection split across N machines
  expectations known failures, flakes and skips, and the verdict on a test's attempts
  execute      running one binary: process group, timeout, temp-file output, stray processes
  kmsg         the kernel log and taint: /dev/kmsg records, patterns, taint flags
  kwatch       the kernel watched around each test, weighed into its record or aborting the run
  journal      the run journal and run.json, appended as the run goes
  resume       taking over the results directory of a run that died
  results      per-test records, results.json and the summary
  attempts     one test run to its record: skip rules, attempts and retries, the kernel between
  fingerprint  what a machine is, for choosing its timing baseline
  gate         the regression gate: from K clean runs, a metric's limit and MDE, or trend only
  baseline     baseline files (one summary per clean run): format, reading, checking, finding
  runmetrics   a run's results.json read back: its metrics, durations and fingerprint
  cleanrun     which run a results.json is (its run id) and whether it is clean
  baseline_update  distinct clean runs made into a baseline, or added to one
  judge        a run's metrics judged against its baseline by the gate: the one regression verdict
  compare      `gpuconform compare A B`: state changes and sample-level metric deltas, a report only
  merge        results directories merged (shards of one run, a run and its re-runs)
  report       report.html: one self-contained page of a run
  soakplot     a soak's series drawn against cycles, for report.html and the record's page
  seal         a record sealed: its one written form, content hash, GnuPG signature, verify
  qualify      the qualification record: built from a run, written with its page
  progress     the live progress line of a run
  doctor       `gpuconform doctor`: what GPU-direct file I/O needs, and --fix
  fleet_script the fleet's batch scripts: one array task per shard, the merge after them
  fleet_slurm  Slurm's commands (sbatch, squeue, sacct, sinfo, scancel): calls, parsing, one-line errors
  fleet        `gpuconform fleet submit / status / resume`: a selection across Slurm GPU nodes
  options      a run's options: parsed, stored in run.json, given back as arguments; its inputs
  levels       quick / standard / long: test lists, --duration, each soak's share of a long run
  runend       what a finished run writes: run info, notes, results.json, comparison, report
  plugin       the pytest plugin: pytest's hooks over a run's state, delegating the rest
  cli          the `gpuconform` command
"""

__version__ = "0.1.0"
