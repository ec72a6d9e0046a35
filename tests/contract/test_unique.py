"""Unique jobs: one job per (task, key) while active / within unique_for; keep or replace."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import conveyor
from conveyor.backends.base import Backend
from conveyor.errors import ConfigurationError
from conveyor.states import JobState
from tests.support.flow import drain, needs


def test_keep_returns_the_existing_job(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task(unique_key=lambda user_id, note="": user_id)
    def sync(user_id: int, note: str = "") -> str:
        return note

    first = sync.enqueue(1, "a")
    assert sync.enqueue(1, "b") == first
    other = sync.enqueue(2, "c")
    assert other != first
    drain(app)
    assert first.result(timeout=5) == "a"
    # Finished and no unique_for: the key is free again.
    again = sync.enqueue(1, "d")
    assert again != first


def test_unique_for_holds_after_finish(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    # 1 s, not less: a burst drain on Redis may idle 0.25 s before it sees the finish.
    @app.task(unique_key="daily", unique_for=1.0)
    def report() -> None: ...

    enqueued = time.time()
    first = report.enqueue()
    drain(app)
    assert first.status is JobState.SUCCEEDED
    assert report.enqueue() == first  # still inside the window
    time.sleep(max(0.0, enqueued + 1.05 - time.time()))
    assert report.enqueue() != first


def test_replace_debounces_until_it_runs(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task(unique_key=lambda doc, text: doc, on_conflict="replace")
    def index(doc: str, text: str) -> str:
        return text

    first = index.with_options(delay=60).enqueue("d1", "v1")
    second = index.with_options(delay=0).enqueue("d1", "v2")
    assert second == first
    record = first.refresh()
    assert record.state is JobState.QUEUED  # run time replaced too
    drain(app)
    assert first.result(timeout=5) == "v2"


def test_with_options_unique_and_bad_policy(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task
    def t(x: int) -> None: ...

    a = t.with_options(unique_key="k").enqueue(1)
    assert t.with_options(unique_key="k").enqueue(2) == a
    assert t.enqueue(3) != a  # no key: not unique
    with pytest.raises(ConfigurationError):
        t.with_options(on_conflict="merge")


#: One enqueuer: opens the store, says it is ready, waits for the go line on stdin, then
#: enqueues keys 0-19 and prints the ids it got back.
_ENQUEUER = """
import json, sys
import conveyor
app = conveyor.App(sys.argv[1])

@app.task(name="uniq", unique_key=lambda k: k)
def uniq(k: int) -> None: ...

_ = app.backend  # the store opened before the start line, not in the race
print("ready", flush=True)
sys.stdin.readline()
print(json.dumps(sorted(uniq.enqueue(k).id for k in range(20))), flush=True)
app.close()
"""


@pytest.mark.slow
def test_two_processes_same_key_same_instant_make_one_job(
    app: conveyor.App, backend: Backend, backend_url: str
) -> None:
    needs(backend, "unique")
    needs(backend, "shared")  # other processes enqueue to the same store
    # Fresh interpreters, not forks of this process (a fork copies locks other threads
    # hold: the store's connection pool, pytest-xdist's channel; one hung 30 s), nor
    # multiprocessing's spawn (it re-runs __main__, which is stdin in .ci/release). Their
    # start-up is outside the race: all four get the go line once each has its store open.
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _ENQUEUER, backend_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    answers = [json.loads(p.communicate(timeout=30)[0]) for p in procs]
    assert all(a == answers[0] for a in answers)  # every process got the same 20 jobs
    from conveyor.backends.base import JobListParams

    assert len(backend.job_list(JobListParams(task="uniq", limit=1000))) == 20
