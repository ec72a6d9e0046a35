"""Every reader survives odd worker rows and counts, from the outside (issue 21): the
``conveyor`` CLI through a pipe (``status``, ``queues``, ``check``, text and ``--json``),
the dashboard served by uvicorn and fetched over HTTP, and the metrics gauges.

The rows are written by hand into a real store (tests/support/odd_rows.py): a workers
row whose ``queues`` is not JSON and whose ``heartbeat_at`` is text (SQLite, Redis) or
NaN (PostgreSQL's double precision holds nothing else odd), a periodic schedule whose
last slot is no time, a queued job whose run_at is no time, and on Redis a counts field that is not an integer. Before the fix each of
these commands failed with a traceback and each page with a 500.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from tests.contract.helpers import register
from tests.integration.cli_run import conveyor as run_conveyor
from tests.support.backends import BACKEND_URLS
from tests.support.odd_rows import (
    periodic_row,
    postgres_row,
    redis_count,
    redis_row,
    row,
    sqlite_row,
    worker_row,
)

pytest.importorskip("starlette")


@pytest.fixture(params=sorted(BACKEND_URLS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store on each backend holding one good job, one good worker and the odd rows."""
    store = BACKEND_URLS[request.param](request, tmp_path)
    app = conveyor.App(store)

    @app.task(name="t.good", queue="q")
    def good() -> None: ...

    good.enqueue()
    register(app.backend, "good-worker")
    app.close()
    pg = store.startswith("postgres")
    # The odd times: text where the store's columns hold any, NaN in PostgreSQL's
    # DOUBLEs; MariaDB's DOUBLE holds neither, so its worker row is odd by its queues only
    # and its times stay plain.
    odd_time: object = "NaN" if pg else None if store.startswith("mariadb") else "soon"
    worker_row(
        store, "odd-worker", queues="not json", **({"heartbeat_at": odd_time} if odd_time else {})
    )
    periodic_row(store, "nightly", last_slot=odd_time, next_slot=4e9)
    if store.startswith("sqlite"):
        sqlite_row(store, queue="q", run_at="soon")
    elif pg:
        postgres_row(store, queue="q", run_at="NaN")
    elif store.startswith("mariadb"):
        row(store, queue="q")
    else:
        redis_row(store, queue="q", run_at="soon")
        redis_count(store, "queued:ghost", "many")
    return store


def _ok(url: str, *args: str, cwd: Path) -> str:
    proc = run_conveyor(*args, "--url", url, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    return proc.stdout


def test_status_and_queues_through_a_pipe(url: str, tmp_path: Path) -> None:
    text = _ok(url, "status", cwd=tmp_path)
    assert "good-worker" in text and "odd-worker" in text and "nightly" in text
    shown = json.loads(_ok(url, "status", "--json", cwd=tmp_path))
    workers = {w["id"]: w for w in shown["workers"]}
    assert workers["good-worker"]["problems"] == [] and workers["good-worker"]["queues"] == ["q"]
    assert workers["odd-worker"]["queues"] == []
    assert workers["odd-worker"]["problems"][0] == (
        "queues is not a JSON list of names ('not json')"
    )
    (q,) = [s for s in shown["queues"] if s["queue"] == "q"]
    assert q["counts"]["queued"] == 2
    assert "ghost" not in {s["queue"] for s in shown["queues"]}  # Redis: "many" counts 0
    assert [(p["name"], p["last_slot"]) for p in shown["periodic"]] == [("nightly", None)]
    assert " q " in f" {_ok(url, 'queues', cwd=tmp_path)} ".replace("\n", " ")
    listed = json.loads(_ok(url, "queues", "--json", cwd=tmp_path))
    assert next(x for x in listed if x["queue"] == "q")["counts"]["queued"] == 2


def test_check_through_a_pipe_names_the_odd_counts_on_redis(url: str, tmp_path: Path) -> None:
    proc = run_conveyor("check", "--url", url, "--json", cwd=tmp_path)
    found = json.loads(proc.stdout)
    kinds = {p["kind"] for p in found["problems"]}
    if url.startswith("redis"):
        assert proc.returncode == 1 and "counts_not_integer" in kinds
    else:
        assert proc.returncode == 0 and kinds == set(), proc.stdout


def _write(url: str, **columns: object) -> str:
    if url.startswith("redis"):
        return redis_row(url, **{k: str(v) for k, v in columns.items()})
    return row(url, **columns)


def test_check_through_a_pipe_names_rows_that_can_never_move(url: str, tmp_path: Path) -> None:
    nowhere = _write(url, queue="")
    orphan = _write(url, state="waiting", waiting_on=-1)
    proc = run_conveyor("check", "--url", url, cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    shown = {tuple(line.split()[:2]) for line in proc.stdout.splitlines()}
    assert ("queued_without_queue", nowhere) in shown, proc.stdout
    assert ("waiting_on_negative", orphan) in shown, proc.stdout
    assert ("waiting_without_parent", orphan) in shown, proc.stdout


@pytest.fixture
def dashboard(url: str) -> Iterator[str]:
    """The dashboard of ``url`` on a real uvicorn server on a free loopback port."""
    import uvicorn

    from conveyor.web import create_app

    app = conveyor.App(url)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # handed to uvicorn already bound: no port race
    server = uvicorn.Server(uvicorn.Config(create_app(app), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        threading.Event().wait(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(10)
    sock.close()
    app.close()


def test_dashboard_pages_over_http(dashboard: str) -> None:
    # Every page from one server: the odd store and uvicorn are made once per store.
    for path in ["/", "/workers", "/jobs", "/jobs?queue=q"]:
        with urllib.request.urlopen(dashboard + path, timeout=10) as response:
            assert response.status == 200, path
            page = response.read().decode()
        if path == "/workers":
            assert "odd-worker" in page and "good-worker" in page
            assert "queues is not a JSON list of names" in page


def test_metrics_gauges_read_the_odd_store(url: str) -> None:
    pytest.importorskip("prometheus_client")
    from conveyor.metrics import WorkerMetrics
    from conveyor.worker.worker import Worker

    app = conveyor.App(url)
    try:
        metrics = WorkerMetrics(Worker(app))
        metrics.refresh()
        assert 'conveyor_queue_depth{queue="q",state="queued"} 2.0' in metrics.text()
        metrics.close()
    finally:
        app.close()
