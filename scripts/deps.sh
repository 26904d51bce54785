#!/usr/bin/env bash
# Installs what gpuconform needs and is missing, from Debian's packages.
# Usage: bash scripts/deps.sh build|test    (root, or sudo for apt-get)
#
# Essentials (the job cannot run without them): meson, ninja, a C compiler and the C library's
# headers, and a Python >= 3.9 that can import pytest (scripts/python.sh picks it), scipy
# (the timing baselines' regression gate) and jinja2 (the HTML report's templates). Each is
# checked as a capability (a command, a header, an import), not as a Debian package, so a
# machine that has them some other way (a virtual environment's pytest and meson, a vendor
# image) needs nothing installed.
# Wanted (built and tested where they can be had, never a reason to stop): pkg-config and
# Debian's ROCm development packages, so the AMD code is compiled even without an AMD GPU; for
# the tests also chromium (the HTML report in a real browser), clang-14 + lld-14 (the
# committed device kernels rebuilt and compared), slurm-wlm + munge (the fleet tests' real
# Slurm cluster of one host, runner/tests/slurm_cluster.py), nfs-kernel-server (the journal's
# lock on a real NFS mount of this host, runner/tests/test_journal_nfs.py, where the kernel
# serves NFS) and piglit (`piglit summary` reads `gpuconform export --format piglit`'s file,
# runner/tests/test_piglit.py), python3-prometheus-client (the --openmetrics file read back by
# the Prometheus project's own parser, runner/tests/test_openmetrics.py). The tests that use
# them skip without them.
#
# apt-get is tried only for what is missing. Its output goes to a log file; what this prints is
# what was installed and, where apt-get could not help (no package registry, not Debian, neither
# root nor sudo), one line per missing essential. Exit 1 when an essential is still missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/python.sh"

role=${1:-build}
case "$role" in
build | test) ;;
*) echo "scripts/deps.sh: unknown role '$role' (build or test)" >&2; exit 2 ;;
esac

# what|Debian package|how else; has_<what> checks it
essentials=(
	"meson|meson|python3 -m pip install meson"
	"ninja|ninja-build|python3 -m pip install ninja"
	"cc|gcc|your distribution's gcc"
	"headers|libc6-dev|your distribution's C library headers (glibc-devel)"
	"pytest|python3-pytest|python3 -m pip install pytest (in a virtual environment)"
	"scipy|python3-scipy|python3 -m pip install scipy (the regression gate's Student's t)"
	"jinja2|python3-jinja2|python3 -m pip install jinja2 (the HTML report's templates)"
)
wanted=(pkg-config libdrm-dev linux-libc-dev libhsa-runtime-dev libamdhip64-dev librocm-smi-dev)
[ "$role" = test ] && wanted+=(chromium clang-14 lld-14 slurm-wlm munge nfs-kernel-server piglit
	python3-prometheus-client)

has_meson() { command -v meson >/dev/null; }
has_ninja() { command -v ninja >/dev/null; }
has_cc() { command -v cc >/dev/null || command -v gcc >/dev/null; }
has_headers() { [ -e /usr/include/stdio.h ]; }
has_pytest() { gc_pick_python; }
has_scipy() { gc_pick_python && "$gc_python" -c 'import scipy.stats' 2>/dev/null; }
has_jinja2() { gc_pick_python && "$gc_python" -c 'import jinja2' 2>/dev/null; }

# Daemons live in sbin, off a non-root PATH.
has_commands() {
	local c
	for c in "$@"; do
		PATH="$PATH:/usr/sbin:/sbin" command -v "$c" >/dev/null || return 1
	done
}

# A wanted package is there when dpkg says so, or, for the commands among them, when the
# command is (a non-Debian machine can have those without dpkg).
has_package() {
	case "$1" in
	pkg-config) command -v pkg-config >/dev/null && return 0 ;;
	chromium) command -v chromium >/dev/null && return 0 ;;
	clang-14) command -v clang-14 >/dev/null && return 0 ;;
	lld-14) command -v ld.lld-14 >/dev/null && return 0 ;;
	slurm-wlm) has_commands slurmctld slurmd slurmstepd sbatch squeue sinfo scontrol scancel && return 0 ;;
	munge) has_commands munged && return 0 ;;
	nfs-kernel-server) has_commands exportfs rpc.nfsd rpc.mountd mount.nfs && return 0 ;;
	piglit) command -v piglit >/dev/null && return 0 ;;
	esac
	command -v dpkg-query >/dev/null &&
		dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing_essentials() {
	local e
	for e in "${essentials[@]}"; do
		"has_${e%%|*}" || printf '%s\n' "$e"
	done
}

mapfile -t missing < <(missing_essentials)
want=()
for p in "${wanted[@]}"; do has_package "$p" || want+=("$p"); done
[ ${#missing[@]} -eq 0 ] && [ ${#want[@]} -eq 0 ] && exit 0

need=()
for e in "${missing[@]}"; do
	IFS='|' read -r _ pkg _ <<<"$e"
	need+=("$pkg")
done

log=$(mktemp "${TMPDIR:-/tmp}/gpuconform-apt.XXXXXX.log")
apt_note="no apt-get here"
if ! command -v apt-get >/dev/null; then
	:
elif [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
	apt_note="neither root nor sudo to run apt-get"
else
	as_root=()
	[ "$(id -u)" -eq 0 ] || as_root=(sudo)
	apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y
		-o Acquire::Retries=0 -o Acquire::http::Timeout=30 -o Acquire::https::Timeout=30)
	install() { "${apt[@]}" install --no-install-recommends "$@" >>"$log" 2>&1; }
	apt_note="apt-get could not install it (log: $log)"
	if timeout 600 "${apt[@]}" update >>"$log" 2>&1; then
		# Said only once the registry answered: where it does not, the lines below are all.
		[ ${#need[@]} -eq 0 ] || echo "gpuconform: installing ${need[*]} with apt-get"
		if ! install "${need[@]}" "${want[@]}"; then
			# One package that cannot be had must not keep the others out: the
			# essentials together, then each wanted one alone.
			[ ${#need[@]} -eq 0 ] || install "${need[@]}" || true
			for p in "${want[@]}"; do install "$p" || true; done
		fi
	fi
	got=()
	for p in "${want[@]}"; do has_package "$p" && got+=("$p"); done
	[ ${#got[@]} -eq 0 ] || echo "gpuconform: installed ${got[*]}"
fi

mapfile -t still < <(missing_essentials)
for e in "${still[@]}"; do
	IFS='|' read -r what pkg how <<<"$e"
	if [ "$what" = pytest ]; then
		gc_pick_python || true # for gc_python_why: the check above ran in a subshell
		echo "gpuconform: $(gc_python_help) [$apt_note]" >&2
	else
		echo "gpuconform: missing $what: install the Debian package $pkg, or $how [$apt_note]" >&2
	fi
done
[ ${#still[@]} -eq 0 ] || exit 1
[ ${#missing[@]} -eq 0 ] || echo "gpuconform: installed ${need[*]}"
rm -f "$log"
