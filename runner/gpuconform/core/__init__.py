"""The run core: what runs the suite's binaries and records their results,
and what every product reads a run with. It imports nothing above it: no
product (perf, report, fleet, qualify, doctor, export) and not the CLI or
the pytest plugin (runner/tests/test_layers.py checks it).

Its modules, one job each, from the bottom up:
  atomic       the one way a file is written: whole or not at all
  fmt          numbers and text as the runner prints them (units, percentages, p-values, one line)
  jsondoc      JSON files read with one-line errors that name the file, line and field
  textfile     text files read as UTF-8, a bad byte named by its line
  hist         a metric's samples as a histogram (every gap), read as the samples it stands for
  stats        robust statistics of timing samples: median, MAD, Mann-Whitney U, shifts
  protocol     pure parsing of a binary's output (igt_core's line protocol)
  states       result states and the pure classification of one subtest run
  metrickey    a metric's name rule and its key (BIN@SUB[@DYN]:NAME[ [NODE]]): made and read back
  soak         validation of the soak lines (leak and drift series) a binary appends
  metrics      validation of the metrics JSON lines a binary appends, and of a metric's direction
  manifest     the manifest files meson writes (one binary a line)
  testlist     test lists: which BINARY@SUBTEST tests a run selects
  contracts    the contract table: which subtests check one contract on each vendor, and why a
               twin is missing
  catalogue    the metric catalogue (data/metrics.txt): every metric's unit and scope
  shard        one selection split across N machines
  expectations known failures, flakes and skips, and the verdict on a test's attempts
  forks        /proc/stat's count of created tasks (the stray check)
  execute      running one binary: process group, timeout, temp-file output, stray processes
  kmsg         the kernel log and taint: /dev/kmsg records, patterns, taint flags
  fsfault      a file system's failure (full, read-only, gone) said in one line
  tool         an outside program (sbatch, gpg) missing or silent, said as the caller's one line
  journal      the run journal and run.json, appended as the run goes
  results      per-test records, results.json and the summary
  kwatch       the kernel watched around each test, weighed into its record or aborting the run
  runtmp       the run's own temporary directory
  resume       taking over the results directory of a run that died
  resultsdir   whether a results directory may be a new run's
  attempts     one test run to its record: skip rules, attempts and retries, the kernel between
  devices      the node's GPUs (--devices)
  placement    where a test runs on a node of several GPUs (--jobs)
  gang         a test's copies side by side, one record
  queues       per-GPU queues: each GPU walks a block of one-GPU tests from its own start
  queueblock   one such block for the plugin: its tests, the kernel log weighed into each copy
  gpustate     each GPU's clocks, power limit and link at a run's start and end (nvidia-smi)
  fingerprint  what a machine is, for choosing its timing baseline
  runmetrics   a run's results.json read back and checked: its metrics, durations, fingerprint
  optvalues    a run option's value parsed (seconds, devices, retries...)
  levels       quick / standard / long: test lists, --duration, each soak's share of a long run
  optable      the run options' table: CLI and pytest spellings, help, type, default
  options      a run's options: parsed, stored in run.json, given back as arguments; its inputs
  progress     the live progress line of a run
  bounded      one step of a run's end in a child limited in time and memory
  runend       what a finished run writes: run info, notes, results.json; the comparison and
               the report are steps its caller hands in
  soakplot     a soak's series drawn against cycles, for report.html and the record's page
  page         what the pages share: the Jinja2 environment, escaping, badges (templates/)
"""
