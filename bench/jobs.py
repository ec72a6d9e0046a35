"""The one job body every arm runs, and the one way completion is detected.

Every arm's task calls :func:`run_job`. The body does its work (noop / cpu / io / mixed),
then marks the job done with ONE ``os.write`` of a fixed-size 64-byte record (job index,
``t0``, start, end, pid; see :data:`RECORD`) to the measurement's marker file, opened
once per process with ``O_WRONLY | O_APPEND``. The harness creates the file and passes
its path in ``BENCH_MARKER_PATH``; it detects completion from the file's size
(N x 64 bytes, polled with ``os.stat`` from the harness's own process) and verifies
exactly-once by reading the records back (:mod:`bench.marker`).

The marker costs ~1.5-3 µs a job here (measured in every run and printed with it), the
same for every arm. The Redis round-trip marker it replaces (pipelined INCR + SETBIT +
RPUSH) cost ~85 µs and capped every arm near 3,000 jobs/s: the benchmark measured
itself.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "marks")
>>> open(path, "wb").close()
>>> os.environ[PATH_ENV] = path
>>> run_job(7, 0.0, "noop")
7
>>> os.path.getsize(path) == RECORD.size
True
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time

#: Environment variable the harness sets to the measurement's marker file.
PATH_ENV = "BENCH_MARKER_PATH"
#: Seconds a ``long`` job sleeps (W8 sets it in the worker's environment; default 2).
LONG_ENV = "BENCH_LONG_S"
#: One record: magic, job index, t0 (enqueue / scheduled wall time), start, end (wall
#: times of the job body), pid of the process that ran it, zero padding, b"\n". Binary,
#: so its size is fixed by construction (a text record's width would grow with its
#: numbers); the magic and the trailing newline let the reader prove no record was torn.
RECORD = struct.Struct("<4sqdddq19xc")
MAGIC = b"BNCH"
assert RECORD.size == 64

_fd: int | None = None
_pid = 0
_lock = threading.Lock()


def close() -> None:
    """Close this process's marker descriptor; the next job opens ``BENCH_MARKER_PATH``
    again. Run in every forked child (Celery prefork, RQ's work horse, Huey and Dramatiq
    processes): the child opens its own descriptor and records its own pid. Also for a
    process that moves to another marker file (the marker's own tests)."""
    global _fd
    if _fd is not None:
        with contextlib.suppress(OSError):
            os.close(_fd)
    _fd = None


os.register_at_fork(after_in_child=close)


def _open() -> int:
    """Open the marker file once per process (the first job pays it; ~10 µs)."""
    global _fd, _pid
    with _lock:
        if _fd is None:
            path = os.environ.get(PATH_ENV)
            if not path:
                raise RuntimeError(f"{PATH_ENV} is not set: the bench harness sets it")
            # No O_CREAT: the harness creates the file; a wrong path fails loudly here
            # instead of writing marks where nobody counts them.
            _fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            _pid = os.getpid()
        return _fd


def mark(i: int, t0: float, start: float, end: float) -> None:
    """Append job ``i``'s record with a single ``os.write``.

    Atomic by POSIX: with ``O_APPEND`` the seek to the end and the write happen as one
    step, and a write of fewer than ``PIPE_BUF`` (4,096) bytes to a local file is not
    split, so records from any number of threads and processes never interleave or
    overwrite each other. The reader still checks every record (magic, newline, size)."""
    fd = _fd if _fd is not None else _open()
    os.write(fd, RECORD.pack(MAGIC, i, t0, start, end, _pid, b"\n"))


def cpu_work() -> int:
    """The seed-004 cpu job: a 100,000-iteration integer loop."""
    total = 0
    for k in range(100_000):
        total += k
    return total


def run_job(i: int, t0: float, kind: str) -> int:
    """Do the work of job ``i`` (enqueued/scheduled at wall time ``t0``) and mark it done."""
    start = time.time()
    if kind == "cpu" or (kind == "mixed" and i % 2 == 0):
        cpu_work()
    elif kind == "io" or kind == "mixed":
        time.sleep(0.005)
    elif kind == "long":  # W8's slot holder: blocks its slot, not the GIL
        time.sleep(float(os.environ.get(LONG_ENV, "2.0")))
    end = time.time()
    mark(i, t0, start, end)
    return i
