"""W5 in-process: one fresh process imports conveyor, opens a fresh store, enqueues one
job and runs it with an in-process worker; prints ``done <wall time>`` when the job body
has run. The harness times process start (just before spawning) to that instant.

Deliberately not part of the ``bench`` package's import graph, so nothing of the harness
is imported on the timed path: only conveyor and the stdlib. Completion is the job's own
timestamp (not the suite's marker file); the job is verified by reading its result
back.

Usage: ``python bench/cold_start.py URL`` (the URL of a store with nothing in it).
With ``--floor`` it only prints the time, so the same measurement gives the interpreter's
own start-up on this machine.
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str]) -> int:
    if argv[1] == "--floor":
        print(f"done {time.time():.6f}", flush=True)
        return 0
    import conveyor
    from conveyor.worker.worker import Worker

    app = conveyor.App(argv[1])
    finished: list[float] = []

    @app.task
    def first(x: int) -> int:
        finished.append(time.time())
        return x + 1

    job = first.enqueue(41)
    Worker(app, burst=True).run()
    if job.result(timeout=10) != 42:
        print("wrong result", flush=True)
        return 1
    print(f"done {finished[0]:.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
