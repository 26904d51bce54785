"""Beyond one machine: results directories merged, and a selection run
across Slurm GPU nodes as shards merged at the end. Built on the run core
(core/: the options and their table, the journal, the results, the
shards); it imports no other product (runner/tests/test_layers.py checks
it).

  merge        results directories merged (shards of one run, a run and its re-runs)
  fleet_script the fleet's batch scripts: one array task per shard, the merge after them
  fleet_slurm  Slurm's commands (sbatch, squeue, sacct, sinfo, scancel): calls, parsing,
               one-line errors
  fleet        `gpuconform fleet submit / status / resume`: a selection across Slurm GPU nodes
"""
