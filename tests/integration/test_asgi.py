"""``conveyor.contrib.asgi``: an embedded worker that lives and drains with a FastAPI app.

Through ``httpx.ASGITransport`` with the ASGI lifespan protocol driven as a server drives
it, and once through a real uvicorn process stopped with SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import conveyor
import conveyor.contrib.asgi
from conveyor.states import JobState
from tests.integration.cli_run import clean_env
from tests.integration.conftest import wait_for
from tests.support.redis_server import isolated_url


@contextlib.asynccontextmanager
async def served(
    asgi_app: Any, state: dict[str, Any] | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """The ASGI lifespan as a server runs it (startup, requests, shutdown), with an httpx
    client on the app in between. ``state``: the lifespan state the server would hand
    to each request (filled by the app at startup)."""
    to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    scope = {
        "type": "lifespan",
        "asgi": {"version": "3.0"},
        "state": {} if state is None else state,
    }
    task = asyncio.create_task(asgi_app(scope, to_app.get, from_app.put))
    await to_app.put({"type": "lifespan.startup"})
    message = await from_app.get()
    assert message["type"] == "lifespan.startup.complete", message
    transport = httpx.ASGITransport(app=asgi_app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            yield client
    finally:
        await to_app.put({"type": "lifespan.shutdown"})
        message = await from_app.get()
        assert message["type"] == "lifespan.shutdown.complete", message
        await task


def make_api(app: conveyor.App, **options: Any) -> FastAPI:
    """What a user writes: tasks, a lifespan, endpoints that enqueue with aenqueue."""
    seen: dict[str, Any] = {}

    @app.task
    async def double(n: int) -> dict[str, Any]:
        seen["loop"] = asyncio.get_running_loop()
        return {"n": n * 2}

    @app.task
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "rested"

    api = FastAPI(lifespan=conveyor.contrib.asgi.lifespan(app, **options))
    api.state.seen = seen

    @api.post("/double/{n}")
    async def enqueue_double(n: int) -> dict[str, str]:
        job = await double.aenqueue(n)
        return {"job_id": job.id}

    @api.post("/nap/{seconds}")
    async def enqueue_nap(seconds: float) -> dict[str, str]:
        job = await nap.aenqueue(seconds)
        return {"job_id": job.id}

    @api.get("/jobs/{job_id}")
    async def result(job_id: str) -> Any:
        return await app.job(job_id).aresult(timeout=10)

    return api


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def store_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    return sqlite_url if request.param == "sqlite" else isolated_url(request)


def test_an_endpoint_enqueues_and_the_embedded_worker_runs_it_on_the_server_loop(
    store_url: str,
) -> None:
    app = conveyor.App(store_url)
    api = make_api(app, concurrency=4)

    async def scenario() -> tuple[Any, Any, bool]:
        async with served(api) as client:
            response = await client.post("/double/21")
            job_id = response.json()["job_id"]
            result = (await client.get(f"/jobs/{job_id}")).json()
            same_loop = api.state.seen["loop"] is asyncio.get_running_loop()
        return job_id, result, same_loop

    job_id, result, same_loop = asyncio.run(scenario())
    assert result == {"n": 42}
    assert same_loop  # the async pool runs jobs on the application's own loop
    assert app.job(job_id).status is JobState.SUCCEEDED
    assert app.backend.worker_list() == []  # the worker deregistered at shutdown


def test_shutdown_lets_a_running_job_finish_within_the_timeout(sqlite_url: str) -> None:
    app = conveyor.App(sqlite_url)
    api = make_api(app, shutdown_timeout=10)

    async def scenario() -> str:
        async with served(api) as client:
            job_id: str = (await client.post("/nap/0.5")).json()["job_id"]
            await _until_running(app, job_id)
        return job_id  # shutdown returned: the drain is over

    job_id = asyncio.run(scenario())
    assert app.job(job_id).status is JobState.SUCCEEDED
    assert app.job(job_id).result() == "rested"


def test_shutdown_releases_a_job_that_outlives_the_timeout(sqlite_url: str) -> None:
    app = conveyor.App(sqlite_url)
    api = make_api(app, shutdown_timeout=0.2)

    async def scenario() -> tuple[str, float]:
        async with served(api) as client:
            job_id: str = (await client.post("/nap/30")).json()["job_id"]
            await _until_running(app, job_id)
            started = time.monotonic()
        return job_id, time.monotonic() - started

    job_id, shutdown_took = asyncio.run(scenario())
    record = app.job(job_id).refresh()
    assert record.state is JobState.QUEUED  # back in the queue, for the next worker
    assert record.attempt == 0  # a release does not count as an attempt
    assert shutdown_took < 5


def test_it_composes_with_the_applications_own_lifespan(sqlite_url: str) -> None:
    app = conveyor.App(sqlite_url)
    events: list[str] = []

    @app.task
    async def ping() -> str:
        return "pong"

    @contextlib.asynccontextmanager
    async def own(api: FastAPI) -> AsyncIterator[dict[str, str]]:
        events.append("own start")
        yield {"greeting": "hello"}
        events.append("own stop")

    api = FastAPI(lifespan=conveyor.contrib.asgi.lifespan(app, inner=own))

    @api.get("/ping")
    async def enqueue_ping() -> Any:
        job = await ping.aenqueue()
        return await job.aresult(timeout=10)

    state: dict[str, Any] = {}

    async def scenario() -> Any:
        async with served(api, state) as client:
            events.append("serving")
            return (await client.get("/ping")).json()

    assert asyncio.run(scenario()) == "pong"
    assert events == ["own start", "serving", "own stop"]
    assert state == {"greeting": "hello"}  # what the inner lifespan yields reaches the server


def test_a_store_that_cannot_be_opened_fails_the_start_up(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    app = conveyor.App(f"sqlite:///{tmp_path / 'a-file' / 'jobs.db'}")  # cannot be created
    api = FastAPI(lifespan=conveyor.contrib.asgi.lifespan(app))

    async def start() -> dict[str, Any]:
        to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        task = asyncio.create_task(api(scope, to_app.get, from_app.put))
        await to_app.put({"type": "lifespan.startup"})
        message = await from_app.get()
        with contextlib.suppress(Exception):
            await task
        return message

    message = asyncio.run(start())
    assert message["type"] == "lifespan.startup.failed"


async def _until_running(app: conveyor.App, job_id: str) -> None:
    deadline = time.monotonic() + 10
    while (await app.job(job_id).astatus()) is not JobState.RUNNING:
        assert time.monotonic() < deadline, "the job never started"
        await asyncio.sleep(0.02)


# -- a real server ---------------------------------------------------------------------

SERVICE = """
import asyncio

import conveyor
import conveyor.contrib.asgi
from fastapi import FastAPI

app = conveyor.App("sqlite:///jobs.db")


@app.task
async def nap(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "rested"


api = FastAPI(lifespan=conveyor.contrib.asgi.lifespan(app, shutdown_timeout=1.5))


@api.post("/nap/{seconds}")
async def enqueue_nap(seconds: float) -> dict[str, str]:
    job = await nap.aenqueue(seconds)
    return {"job_id": job.id}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.slow
def test_uvicorn_sigterm_finishes_the_short_job_and_releases_the_long_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "service.py").write_text(textwrap.dedent(SERVICE).lstrip())
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "service:api", "--host=127.0.0.1", f"--port={port}"],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(server.stdout or ()), daemon=True)
    reader.start()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: any("Application startup complete" in x for x in lines), 30, "uvicorn")
        short = httpx.post(f"{base}/nap/0.6").json()["job_id"]
        long = httpx.post(f"{base}/nap/60").json()["job_id"]
        app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}")
        wait_for(
            lambda: all(app.job(j).status is JobState.RUNNING for j in (short, long)),
            15,
            "both jobs running",
        )
        server.send_signal(signal.SIGTERM)
        # Recent uvicorn re-raises the signal it handled once it has shut down cleanly.
        assert server.wait(20) in (0, -signal.SIGTERM), "".join(lines)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
    reader.join(5)
    assert any("Application shutdown complete" in x for x in lines), "".join(lines)
    assert app.job(short).result() == "rested"  # finished during the drain
    released = app.job(long).refresh()
    assert (released.state, released.attempt) == (JobState.QUEUED, 0), json.dumps(lines)
    assert app.backend.worker_list() == []
