#!/usr/bin/env bash
# One night on a GPU machine: what the timer and the CI job of docs/nightly.md run.
# Usage: bash scripts/nightly.sh RESULTS_ROOT [gpuconform run options...]
# The night's results go to RESULTS_ROOT/<UTC date-time>/ (results.json, junit.xml, summary.txt,
# report.html), RESULTS_ROOT/latest points at them, the night is compared with the one
# before (compare.txt) and RESULTS_ROOT/history.html is written again over every night. Exit status: gpuconform run's (0 nothing unexpected, 1 something
# unexpected: a failure without a rule or a metric regression, 2 it could not start).
set -uo pipefail
cd "$(dirname "$0")/.."
root=${1:?usage: bash scripts/nightly.sh RESULTS_ROOT [gpuconform run options...]}
shift
mkdir -p "$root" || exit 2
night="$root/$(date -u +%Y%m%dT%H%M%SZ)"
prev=
[ -L "$root/latest" ] && prev=$(readlink -f "$root/latest")
bash scripts/run-suite.sh --results "$night" "$@" -- --junitxml="$night/junit.xml"
status=$?
[ -f "$night/results.json" ] || exit "$status"
ln -sfn "$(basename "$night")" "$root/latest"
if [ -n "$prev" ] && [ -f "$prev/results.json" ]; then
	./gpuconform compare "$prev" "$night" >"$night/compare.txt" &&
		echo "gpuconform: $(sed -n 2p "$night/compare.txt") (against $prev: $night/compare.txt)"
fi
# Every night so far on one page: when each change first appeared (a night that cannot be read is
# named there and here, and does not change this night's status).
./gpuconform history "$root" -o "$root/history.html" || true
exit "$status"
