"""A poison pill among innocent jobs, for the poison-isolation tests (URL from
$CONVEYOR_URL)."""

from __future__ import annotations

import os
import time

import conveyor

app = conveyor.App(heartbeat_interval=0.2, heartbeat_ttl=3.0, rescue_interval=0.2)


@app.task(name="poison", max_attempts=1)
def poison() -> None:
    """Kills its worker (SIGABRT), as a segfaulting C extension would."""
    time.sleep(0.05)  # its batch-mates are claimed and running when it strikes
    os.abort()


@app.task(name="innocent", max_attempts=1)
def innocent(i: int) -> int:
    time.sleep(0.05)
    return i


@app.task(name="exits_now", max_attempts=1)
def exits_now(code: int) -> None:
    """Ends the process at once (no cleanup, no exit handler runs)."""
    os._exit(code)
