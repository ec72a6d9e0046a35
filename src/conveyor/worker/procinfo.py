"""Process identity on this host: is a PID alive, and is it still the same process?

PIDs are reused; the start time of a process (``/proc/<pid>/stat`` field 22, in clock
ticks since boot) tells a reused PID apart. Where /proc is missing, only the PID is
checked.

Example:
    >>> import os
    >>> pid_alive(os.getpid(), process_start_time(os.getpid()))
    True
"""

from __future__ import annotations

import os


def process_start_time(pid: int) -> float | None:
    """The OS start time of ``pid`` (opaque number), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return float(fields[19])
    except (IndexError, ValueError):
        return None


def pid_alive(pid: int, started: float | None) -> bool:
    """True while ``pid`` runs and (when known) started at ``started``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if started is None:
        return True
    now_started = process_start_time(pid)
    if now_started is None:
        return True
    if now_started != started:
        return False
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] == b"Z"


def host_name() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it.

    ``os.uname()`` answers the same on POSIX without importing :mod:`socket`, which the
    worker otherwise never needs (start-up time counts: BENCHMARKS.md#cold-start-w5-in-process).
    """
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()
