#!/usr/bin/env bash
# The suite's main job: install what is missing, build, run every test binary
# through the runner. Arguments go to `gpuconform run` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh build
[ -f build/build.ninja ] || meson setup build
ninja -C build
# cuFile's compat mode needs a udev record of the scratch device, which a machine without udevd
# (a container, a microVM) never has and /run loses at every reboot. As root, write it; as anyone
# else the cuFile tests skip, naming the command (`sudo ./gpuconform doctor --fix`).
if [ "$(id -u)" -eq 0 ] && [ -e /proc/driver/nvidia/version ]; then
	./gpuconform doctor --fix >/dev/null ||
		echo "gpuconform: doctor --fix did not complete: cuFile tests may skip (./gpuconform doctor says why)"
fi
exec ./gpuconform run --build build "$@"
