"""Tasks run by real worker processes in integration tests (URL from $CONVEYOR_URL)."""

from __future__ import annotations

import os
import time

import conveyor

# lease=2: a claim whose reply is lost in a Redis restart leaves its job running under
# the live worker, unknown to it; it is rescued once the lease (not extended) plus the
# heartbeat TTL has passed. Short here so the restart tests do not wait 30 s for that.
app = conveyor.App(
    heartbeat_interval=0.2,
    heartbeat_ttl=3.0,
    rescue_interval=0.2,
    lease=2.0,
    retry=conveyor.Backoff(base=0.05, factor=1, max=0.05, jitter=0),
)


@app.task
def sleepy(seconds: float, marker: str = "") -> int:
    """Sleep, noting the start in ``marker`` so a test knows the job is running."""
    if marker:
        with open(marker, "a") as f:
            f.write(f"{os.getpid()} {conveyor.current_job().attempt}\n")
    time.sleep(seconds)
    return os.getpid()


@app.task
def noop(i: int) -> int:
    return i
