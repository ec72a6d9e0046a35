"""Two stores of one SQLite file in one process, and a third connection from another
process: opening the second store must not drop the first one's POSIX locks.

Closing any descriptor of a file releases every POSIX lock the process holds on it
(sqlite.org/howtocorrupt.html, 2.2). The store used to open and close its file before
SQLite did, even when it existed: another process closing its own connection then saw
no lock, took itself for the last connection, checkpointed and deleted the -wal and
-shm files under this process's open connections, whose next write failed with "disk
I/O error" (seen in the Django tests, where settings overrides open a second store).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import conveyor
from conveyor.states import JobState


def test_a_second_store_on_the_same_file_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    first = conveyor.App(f"sqlite:///{path}")

    @first.task(name="one")
    def one() -> None: ...

    jobs = [one.enqueue()]
    second = conveyor.App(f"sqlite:///{path}")

    @second.task(name="two")
    def two() -> None: ...

    jobs.append(two.enqueue())
    closing = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
        " c.execute('SELECT count(*) FROM jobs').fetchone(); c.close()"
    )
    subprocess.run([sys.executable, "-c", closing, str(path)], check=True, timeout=60)

    # This process still has both stores open: the other process was not the last
    # connection, so the WAL and its index are where SQLite left them...
    assert (tmp_path / "jobs.db-wal").exists() and (tmp_path / "jobs.db-shm").exists()
    # ...and both stores go on writing and reading.
    jobs += [one.enqueue(), two.enqueue()]
    assert [job.refresh().state for job in jobs] == [JobState.QUEUED] * 4
    first.close()
    second.close()
