#!/usr/bin/env bash
# Installs the Debian packages gpuconform needs, only those missing.
# Usage: scripts/deps.sh build|test    (sourced or run; needs root or sudo)
set -euo pipefail

build_pkgs=(meson ninja-build pkg-config gcc libc6-dev python3 python3-pytest
	# the AMD stack, so its code is built and checked even without an AMD GPU
	libdrm-dev linux-libc-dev libhsa-runtime-dev libamdhip64-dev librocm-smi-dev)
# chromium: the HTML report is checked in a real headless browser;
# clang-14 + lld-14: the committed device kernels are rebuilt and compared.
test_pkgs=("${build_pkgs[@]}" chromium clang-14 lld-14)

role=${1:-build}
case "$role" in
build) want=("${build_pkgs[@]}") ;;
test) want=("${test_pkgs[@]}") ;;
*) echo "scripts/deps.sh: unknown role '$role' (build or test)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	as_root=()
elif command -v sudo >/dev/null; then
	as_root=(sudo)
else
	echo "scripts/deps.sh: missing packages (${missing[*]}) and neither root nor sudo" >&2
	exit 1
fi
echo "gpuconform: installing ${missing[*]}"
"${as_root[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
