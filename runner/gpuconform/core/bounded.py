"""Run one step of a run's end in a child process with a time and memory
limit, so that a step that hangs or grows without end (a report drawing an
axis forever once took 108 GiB) costs a line in the summary, not the night's
verdict or the node's memory.

The child is forked (it inherits the loaded modules and the arguments as
they are); what it returns comes back through a pipe, what it raises comes
back as one line.
"""

from __future__ import annotations

import multiprocessing
import resource
from multiprocessing.connection import Connection
from typing import Any, Callable

__all__ = ["BoundedError", "run_bounded"]


class BoundedError(Exception):
    """The step failed, ran out of time or of memory; str() says which, in one line."""


def _address_space() -> int:
    """This process's address space now (VmSize), bytes; 0 when unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _child(conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...],
           memory_bytes: int) -> None:
    # Growth is what is bounded: the parent's address space (libraries, thread
    # stacks reserved by a BLAS) can be large already and is inherited as it is.
    limit = _address_space() + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        conn.send((True, fn(*args)))
    except MemoryError:
        conn.send((False, f"ran out of its {memory_bytes >> 30} GiB of memory"))
    except BaseException as e:  # noqa: BLE001 - every failure comes back as a line
        conn.send((False, str(e) or type(e).__name__))
    finally:
        conn.close()


def run_bounded(fn: Callable[..., Any], *args: Any, timeout_s: float,
                memory_bytes: int) -> Any:
    """fn(*args) in a forked child whose address space may grow by memory_bytes,
    killed after timeout_s; its return value (picklable), or BoundedError."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(send, fn, args, memory_bytes), daemon=True)
    p.start()
    send.close()
    try:
        if not recv.poll(timeout_s):
            raise BoundedError(f"still running after {timeout_s:g} s: killed")
        ok, value = recv.recv()
    except EOFError:
        p.join(5)
        raise BoundedError(f"the child ended without an answer (exit {p.exitcode})") from None
    finally:
        recv.close()
        if p.is_alive():
            p.kill()
        p.join()
    if not ok:
        raise BoundedError(value)
    return value
