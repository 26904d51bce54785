#!/usr/bin/env bash
# Compiles data/kernels/*.cl with clang to PTX and AMDGPU code objects, into
# data/kernels/. With --check, compiles into a temporary directory and fails
# if the committed outputs differ (CI runs that).
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG=${CLANG:-clang-14}
command -v "$CLANG" >/dev/null || CLANG=clang
# What Debian 12's clang 14 can target: Volta+ PTX (the driver JIT-compiles it
# for newer chips) and AMD gfx906/908/90a/1030 (MI300 and RDNA3 need a newer clang).
PTX_ARCH=sm_70
AMD_TARGETS=(gfx906 gfx908 gfx90a gfx1030)
common=(-x cl -cl-std=CL2.0 -O2 -Werror)

out=data/kernels
check=0
if [ "${1:-}" = --check ]; then
	check=1
	# The committed outputs are clang 14's: another clang writes other bytes for the same source.
	if ! "$CLANG" --version 2>/dev/null | grep -q 'clang version 14\.'; then
		echo "build-kernels: no clang 14 here (Debian's clang-14): the committed device kernels" \
			"were not rebuilt and compared with their source"
		exit 0
	fi
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

for src in data/kernels/*.cl; do
	base=$(basename "$src" .cl)
	"$CLANG" "${common[@]}" -target nvptx64-nvidia-cuda -march=$PTX_ARCH -S \
		-o "$out/$base.ptx" "$src"
	for gfx in "${AMD_TARGETS[@]}"; do
		"$CLANG" "${common[@]}" -target amdgcn-amd-amdhsa -mcpu="$gfx" -nogpulib \
			-o "$out/$base.$gfx.hsaco" "$src"
	done
done

if [ $check = 1 ]; then
	status=0
	for f in "$out"/*; do
		name=$(basename "$f")
		if ! cmp -s "$f" "data/kernels/$name"; then
			echo "build-kernels: data/kernels/$name differs from what $($CLANG --version | head -1) builds from its source; run scripts/build-kernels.sh and commit" >&2
			status=1
		fi
	done
	exit $status
fi
echo "build-kernels: wrote $(ls data/kernels/*.ptx data/kernels/*.hsaco | wc -l) files with $($CLANG --version | head -1)"
