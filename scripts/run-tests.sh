#!/usr/bin/env bash
# The project's own tests: build with warnings as errors, the C unit tests
# (meson test), the committed device kernels against their source, then the
# runner's and the contract-mutation pytest suites, under the Python
# scripts/python.sh picks (the one ./gpuconform runs under).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
if [ -f build/build.ninja ]; then
	meson configure build -Dwerror=true
else
	meson setup build --werror
fi
ninja -C build
meson test -C build --print-errorlogs
bash scripts/build-kernels.sh --check
export GPUCONFORM_BUILD_DIR="$PWD/build"
. scripts/python.sh
gc_pick_python || { echo "run-tests: $(gc_python_help)" >&2; exit 1; }
exec "$gc_python" -m pytest -q -p no:cacheprovider runner/tests tests/mutation
