"""python3 -m gpuconform (with runner/ on sys.path)."""

import sys

from .cli import main

sys.exit(main())
