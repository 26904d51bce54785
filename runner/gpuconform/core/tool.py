"""An outside program (sbatch, gpg...) whose two faults, not installed and
no answer in time, reach the user as the caller's one-line error."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["tool_faults"]


@contextmanager
def tool_faults(error: Callable[[str], Exception], missing: str, late: str) -> Iterator[None]:
    """Around a subprocess call: FileNotFoundError (the program is not
    there) becomes error(missing), subprocess.TimeoutExpired error(late),
    each raised from None (no traceback of subprocess's)."""
    try:
        yield
    except FileNotFoundError:
        raise error(missing) from None
    except subprocess.TimeoutExpired:
        raise error(late) from None
