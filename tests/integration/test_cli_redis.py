"""Every ops CLI command against a test redis-server (the Redis twin of
``test_cli_ops.py``), the integrity audit on a store corrupted on purpose, and
``conveyor migrate`` in both directions, interrupted and rerun."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import conveyor
from conveyor.backends.base import JobCountParams, JobFilter, JobListParams
from conveyor.backends.redis.backend import RedisBackend
from conveyor.cli.main import cli
from conveyor.cli.migrate import MOVED, move_page
from conveyor.worker.worker import Worker
from tests.support.redis_server import isolated_url

pytestmark = pytest.mark.redis

Store = tuple[str, dict[str, str]]


def fill(url: str) -> dict[str, str]:
    """3 succeeded, 2 dead (with logs and a traceback), 1 queued job in queue "later"."""
    app = conveyor.App(url, max_attempts=1)

    @app.task(name="t.work")
    def work(x: int, user_id: int = 0) -> dict[str, bool]:
        logging.getLogger("t.work").info("working on %d for %d", x, user_id)
        if x < 0:
            raise ValueError(f"bad x {x}")
        return {"ok": x % 2 == 0}

    ids = {f"x{x}": work.enqueue(x, user_id=x * 10).id for x in (0, 1, 2, -1, -2)}
    Worker(app, burst=True).run(install_signals=False)
    ids["later"] = work.with_options(queue="later").enqueue(5, user_id=50).id
    app.close()
    return ids


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Store:
    url = isolated_url(request)
    return url, fill(url)


def run(url: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(
        cli, [*args[:1], "--url", url, *args[1:]], input=input, catch_exceptions=False
    )


def listed(url: str, *args: str) -> set[str]:
    return {j["id"] for j in json.loads(run(url, "jobs", "--json", *args).output)["jobs"]}


def test_status_jobs_filters_and_paging(store: Store) -> None:
    url, ids = store
    assert run(url, "status").exit_code == 0
    assert listed(url) == set(ids.values())
    assert listed(url, "--where", "kwargs.user_id=10") == {ids["x1"]}
    assert listed(url, "--where", 'kwargs.user_id="10"') == set()  # typed: 10 is not "10"
    assert listed(url, "--where", "args.0=2") == {ids["x2"]}
    assert listed(url, "--where", "result.ok=true") == {ids["x0"], ids["x2"]}
    assert listed(url, "--state", "dead") == {ids["x-1"], ids["x-2"]}
    assert listed(url, "--queue", "later") == {ids["later"]}
    assert listed(url, "--task", "t.work", "--created-after", "1h") == set(ids.values())
    assert listed(url, "--finished-before", "1h") == set()
    page = json.loads(run(url, "jobs", "--json", "--limit", "4").output)
    rest = json.loads(run(url, "jobs", "--json", "--after", page["next_after"]).output)
    assert len(page["jobs"]) == 4 and len(rest["jobs"]) == 2 and rest["next_after"] is None
    assert "dead" in run(url, "jobs", "--state", "dead").output


def test_job_detail_retry_cancel_delete(store: Store) -> None:
    url, ids = store
    data = json.loads(run(url, "job", ids["x-1"], "--json").output)
    [attempt] = data["attempts"]
    assert attempt["outcome"] == "dead" and "bad x -1" in attempt["error"]["traceback"]
    assert [r["message"] for r in data["logs"]] == ["working on -1 for -10"]
    assert "Traceback" in run(url, "job", ids["x-1"]).output
    assert run(url, "job", "nope").exit_code == 1
    assert run(url, "retry", "--state", "dead", input="n\n").exit_code == 1
    assert "2 of 2" in run(url, "retry", "--state", "dead", input="y\n").output
    assert listed(url, "--state", "queued") == {ids["x-1"], ids["x-2"], ids["later"]}
    out = json.loads(run(url, "cancel", ids["later"], "--json").output)
    assert out == {"action": "cancel", "matched": 1, "changed": 1}
    out = json.loads(run(url, "delete", "--where", "result.ok=false", "--yes", "--json").output)
    assert out["changed"] == 1 and run(url, "job", ids["x1"]).exit_code == 1
    assert json.loads(run(url, "retry", ids["x0"], "--json").output)["changed"] == 1


def test_purge_export_and_backup_error(store: Store, tmp_path: Path) -> None:
    url, ids = store
    assert "0 of 0" in run(url, "purge", "--older-than", "1h", "--yes").output
    backend = RedisBackend(url)
    for job in backend.job_list(JobListParams(limit=100)):  # age the finished jobs
        if job.finished_at is not None:
            backend.client.hset(
                backend.keys.job(job.id), "finished_at", job.finished_at - 8 * 86400
            )
    out = json.loads(
        run(url, "purge", "--older-than", "7d", "--state", "succeeded", "--yes", "--json").output
    )
    assert out["changed"] == 3
    assert {j["state"] for j in json.loads(run(url, "jobs", "--json").output)["jobs"]} == {
        "dead", "queued"
    }  # fmt: skip
    lines = run(url, "export", "--format", "jsonl", "--page", "2").stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == sorted(
        [ids["x-1"], ids["x-2"], ids["later"]]
    )
    target = tmp_path / "dead.csv"
    run(url, "export", "--format", "csv", "--state", "dead", "-o", str(target))
    assert ids["x-1"] in target.read_text()
    refused = CliRunner().invoke(cli, ["backup", "--url", url, str(tmp_path / "b.db")])
    assert refused.exit_code == 1 and "only available on the SQLite backend" in refused.output
    backend.close()


def test_queues_pause_resume(store: Store) -> None:
    url, _ = store
    assert run(url, "queues", "pause", "later").output.strip() == "queue later paused"
    queues = {q["queue"]: q for q in json.loads(run(url, "queues", "--json").output)}
    assert queues["later"]["paused"] and queues["later"]["depth"] == 1
    assert not queues["default"]["paused"]
    run(url, "queues", "resume", "later")
    queues = {q["queue"]: q for q in json.loads(run(url, "queues", "--json").output)}
    assert not queues["later"]["paused"] and "later" in run(url, "queues").output


def test_check_finds_corruption(store: Store) -> None:
    url, ids = store
    assert run(url, "check").exit_code == 0
    b = RedisBackend(url)
    c, k = b.client, b.keys
    c.hset(k.job(ids["x0"]), "state", "running")  # no worker, no token
    c.hset(k.job(ids["x1"]), mapping={"state": "running", "worker_id": "ghost", "token": "1"})
    c.sadd(k.inflight("ghost"), ids["x1"])
    c.sadd(k.holders, "ghost")
    c.zrem(k.ready("later"), ids["later"])  # a queued job no worker can see
    c.rpush(k.attempts("gone"), "{}")
    c.zadd(k.scheduled, {ids["x2"]: 1.0})
    result = CliRunner().invoke(cli, ["check", "--url", url, "--json"])
    assert result.exit_code == 1, result.output
    kinds = {(p["kind"], p["job_id"]) for p in json.loads(result.output)["problems"]}
    assert ("running_without_claim", ids["x0"]) in kinds
    assert ("claim_without_live_worker", ids["x1"]) in kinds
    assert ("queued_not_ready", ids["later"]) in kinds
    assert ("orphan_attempt", "gone") in kinds
    assert ("orphan_scheduled_entry", ids["x2"]) in kinds
    assert CliRunner().invoke(cli, ["check", "--url", url]).exit_code == 1
    b.close()


def _moved(url: str) -> list[str]:
    app = conveyor.App(url)
    try:
        return [
            j.id
            for j in app.backend.job_list(JobListParams(limit=1000, filter=JobFilter(states=MOVED)))
        ]
    finally:
        app.close()


@pytest.mark.parametrize("direction", ["sqlite->redis", "redis->sqlite"])
def test_migrate_moves_jobs_and_reruns_cleanly(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    redis_url, sqlite_url = isolated_url(request), f"sqlite:///{tmp_path / 'jobs.db'}"
    source, target = (
        (sqlite_url, redis_url) if direction == "sqlite->redis" else (redis_url, sqlite_url)
    )
    ids = fill(source)
    app = conveyor.App(source)
    app.task(name="t.more")(lambda i: i).with_options(delay=3600).enqueue(1)  # scheduled
    for i in range(12):
        app.task(name="t.more2")(lambda i: i).enqueue(i)
    app.close()
    wanted = sorted(_moved(source))
    assert len(wanted) == 2 + 1 + 1 + 12  # dead, queued "later", scheduled, queued
    # An interruption after two pages, then a crash between copy and delete of one page.
    first = CliRunner().invoke(
        cli, ["migrate", "--from", source, "--to", target, "--page-size", "3", "--limit", "2"]
    )
    assert first.exit_code == 0 and "moved 6 job(s)" in first.output and "left" in first.output
    src, dst = conveyor.App(source), conveyor.App(target)
    page = src.backend.job_list(JobListParams(limit=3, filter=JobFilter(states=MOVED)))
    move_page(src.backend, dst.backend, page, delete=False)
    src.close()
    dst.close()
    again = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert again.exit_code == 0, again.output
    assert "3 were already there" in again.output
    assert _moved(source) == [] and sorted(_moved(target)) == wanted  # exactly one copy each
    dst = conveyor.App(target)
    dead = dst.backend.job_get_many([ids["x-1"]])[0]
    assert dead.state.value == "dead" and dead.attempt == 1 and "bad x -1" in (dead.error or "")
    assert dst.backend.job_attempts(ids["x-1"])[0].outcome == "dead"
    assert dst.backend.job_count(JobCountParams(JobFilter(task="t.more"))) == 1
    dst.close()
    assert (
        "moved 0 job(s)"
        in CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target]).output
    )
