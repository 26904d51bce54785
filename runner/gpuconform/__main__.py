"""python3 -m gpuconform (with runner/ on sys.path; ./gpuconform sets it)."""

import sys

# scripts/python.sh refuses older interpreters for ./gpuconform; this says the same to
# whoever starts the module by hand. The runner's tests pass on 3.9 and on 3.11-3.12.
if sys.version_info < (3, 9):
    sys.exit("gpuconform: %s is Python %d.%d, older than 3.9: run it with a newer python3"
             % ((sys.executable,) + tuple(sys.version_info[:2])))

from .cli import main  # noqa: E402

sys.exit(main())
