#!/usr/bin/env bash
# The suite's main job: install what is missing, build, run every test binary
# through the runner. Arguments go to `gpuconform run` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build
[ -f build/build.ninja ] || meson setup build
ninja -C build
exec ./gpuconform run --build build "$@"
