"""Timing: baselines, the regression gate, a run's metrics judged against
its baseline, and two runs compared. Built on the run core (core/); it
imports no other product (runner/tests/test_layers.py checks it). The run
itself uses judge.judge_run through the pytest plugin, which hands it to
the run's end (core/runend.py).

  gate             the regression gate: from K clean runs, a metric's limit and MDE, or trend only
  baseline         baseline files (one summary per clean run): format, reading, checking, finding
  scope            a metric's node label: what a node-scoped key carries
  judge            a run's metrics judged against its baseline by the gate: the one regression
                   verdict
  cleanrun         which run a results.json is (its run id) and whether it is clean
  baseline_update  distinct clean runs made into a baseline, or added to one
  compare          `gpuconform compare A B`: state changes and sample-level metric deltas, a
                   report only
"""
