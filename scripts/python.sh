# shellcheck shell=sh
# Which Python runs the runner. Sourced (POSIX sh) by ./gpuconform, scripts/run-tests.sh and
# scripts/deps.sh, so the three agree.
#
# gc_pick_python: the first interpreter that is Python >= 3.9 and can import pytest, tried in
# this order: python3 on PATH (a virtual environment's, where one is active), then the system's
# ($GPUCONFORM_SYSTEM_PYTHON, default /usr/bin/python3: Debian's, which sees python3-pytest).
# $GPUCONFORM_PYTHON, when set, is the only one tried. Sets gc_python and returns 0; otherwise
# returns 1 with gc_python_why: one line naming each interpreter tried and why it cannot.
#
# The probe asks importlib for pytest's spec rather than importing it: a few milliseconds
# instead of the 100 or so an import of pytest costs on every command.

gc_python_min_major=3
gc_python_min_minor=9

gc_pick_python() {
	gc_python=
	gc_python_why=
	if [ -n "${GPUCONFORM_PYTHON:-}" ]; then
		set -- "$GPUCONFORM_PYTHON"
	else
		set -- python3 "${GPUCONFORM_SYSTEM_PYTHON:-/usr/bin/python3}"
	fi
	gc__seen=
	for gc__py in "$@"; do
		gc__path=$(command -v "$gc__py" 2>/dev/null) || {
			gc__why "$gc__py: not found"
			continue
		}
		case " $gc__seen " in *" $gc__path "*) continue ;; esac
		gc__seen="$gc__seen $gc__path"
		gc__probe "$gc__path" && return 0
	done
	return 1
}

# One interpreter: sets gc_python when it will do, else adds why to gc_python_why.
gc__probe() {
	gc__out=$("$1" -c 'import sys
sys.stdout.write("%d %d " % sys.version_info[:2])
sys.stdout.flush()
import importlib.util
sys.stdout.write("1" if importlib.util.find_spec("pytest") else "0")' 2>/dev/null)
	gc__status=$?
	set -- "$1" $gc__out
	case "$2$3" in
	*[!0-9]* | "")
		gc__why "$1: did not answer as Python does (exit $gc__status)"
		return 1
		;;
	esac
	if [ "$2" -lt $gc_python_min_major ] ||
		{ [ "$2" -eq $gc_python_min_major ] && [ "$3" -lt $gc_python_min_minor ]; }; then
		gc__why "$1 is Python $2.$3, older than $gc_python_min_major.$gc_python_min_minor"
		return 1
	fi
	if [ "${4:-0}" != 1 ]; then
		gc__why "$1 (Python $2.$3) cannot import pytest"
		return 1
	fi
	gc_python=$1
	return 0
}

gc__why() {
	gc_python_why="${gc_python_why:+$gc_python_why; }$1"
}

# The one line to print when gc_pick_python found none.
gc_python_help() {
	echo "no Python to run the runner: $gc_python_why." \
		"Install pytest: sudo apt-get install python3-pytest (Debian, Ubuntu)," \
		"or python3 -m pip install pytest (in a virtual environment); or name one with" \
		"GPUCONFORM_PYTHON=/path/to/python3"
}
