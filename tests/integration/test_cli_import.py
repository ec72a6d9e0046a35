"""``conveyor export --format jsonl`` -> ``conveyor import`` on every store, through the
real console script: what export writes brings the jobs back whole (ids, states,
payloads, results, errors, times, headers, attempts, logs), ids already there are
skipped and counted, and a bad file is refused with its line number, nothing written."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import JobClaimParams, JobCountParams, JobFilter
from conveyor.redaction import redacted
from conveyor.worker.worker import Worker
from tests.integration.cli_run import assert_one_error
from tests.integration.cli_run import conveyor as run
from tests.support.backends import GENERIC_URLS
from tests.support.stores import fill


def _count(url: str) -> int:
    app = conveyor.App(url)
    try:
        return app.backend.job_count(JobCountParams(JobFilter()))
    finally:
        app.close()


def _export(url: str, cwd: Path, *args: str) -> list[dict[str, Any]]:
    done = run("export", "--url", url, *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(params=sorted(GENERIC_URLS))
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A filled store (the ops CLI's six jobs, plus one claimed by a worker) and an
    empty one of the same kind."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = GENERIC_URLS[request.param](request, tmp_path / "a")
    target = GENERIC_URLS[request.param](request, tmp_path / "b")
    fill(source)
    app = conveyor.App(source)
    # A durable job asleep after a step: its step records go with it (run before the
    # claim below, which this worker's rescue would take back).
    _nightly(app).enqueue()
    Worker(app, burst=True, queues=["durable"]).run(install_signals=False)

    @app.task(name="t.hdr", queue="claimed")
    def hdr(x: int) -> None: ...

    hdr.with_options(headers={"trace": "abc"}).enqueue(1)
    assert len(app.backend.job_claim(JobClaimParams("w-gone", [("claimed", 1)], 1))) == 1
    hdr.with_options(
        headers={"tenant": "t1"}, priority=3, unique_key="one-two", unique_for=600
    ).enqueue(2)
    # A workflow: the callback waits on two parents and is piped their results.
    conveyor.group(hdr.s(3), hdr.s(4)).then(_total(app).s()).enqueue()
    app.close()
    return source, target


def _nightly(app: conveyor.App) -> Any:
    @app.step(name="t.fetch")
    def fetch() -> int:
        return 7

    @app.task(name="t.nightly", queue="durable")
    def nightly() -> int:
        rows = int(fetch())
        conveyor.sleep(3600)
        return rows

    return nightly


def _total(app: conveyor.App) -> Any:
    @app.task(name="t.total", queue="claimed")
    def total(values: list[None]) -> int:
        return len(values)

    return total


@pytest.mark.parametrize("epoch", [False, True])
def test_export_import_round_trip(two_stores: tuple[str, str], tmp_path: Path, epoch: bool) -> None:
    source, target = two_stores
    flags = ("--epoch",) if epoch else ()
    exported = _export(source, tmp_path, *flags)
    path = tmp_path / "jobs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in exported))
    done = run("import", str(path), "--url", target, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"imported 12 job(s) into {redacted(target)}"
    again = _export(target, tmp_path, *flags)
    assert [d["id"] for d in again] == [d["id"] for d in exported]
    running = [d for d in exported if d["state"] == "running"]
    assert len(running) == 1
    for before, after in zip(exported, again, strict=True):
        if before["state"] != "running":
            assert after == before  # every field, attempts and logs included
            continue
        # Its worker belongs to the other store: queued, as a graceful release leaves it.
        assert after["state"] == "queued" and after["attempt"] == before["attempt"] - 1
        assert after["worker_id"] is None and after["lease_until"] is None
        assert [a["outcome"] for a in after["attempts"]] == ["released"]
        assert after["attempts"][0]["worker_id"] == "w-gone"
        same = {
            k
            for k in before
            if k not in ("state", "attempt", "worker_id", "lease_until", "attempts")
        }
        assert {k: after[k] for k in same} == {k: before[k] for k in same}
    dead = next(d for d in again if d["state"] == "dead")
    assert dead["error"]["type"] == "ValueError" and dead["logs"]
    assert {d["headers"].get("trace") for d in again} >= {"abc"}

    asleep = next(d for d in again if d["task"] == "t.nightly")
    assert asleep["state"] == "scheduled"
    assert (asleep["steps"][0]["name"], asleep["steps"][0]["result"]) == ("t.fetch", "7")
    assert [s["name"] for s in asleep["steps"]] == ["t.fetch", "sleep"]

    waiting = next(d for d in again if d["state"] == "waiting")
    assert waiting["pipe"] == 2 and len(waiting["parents"]) == 2 and waiting["waiting_on"] == 2
    assert any(d["unique_key"] for d in again)  # its window: in the equality above

    # The imported workflow still runs on the target: the callback gets both results.
    app = conveyor.App(target)
    app.task(name="t.hdr", queue="claimed")(lambda x: None)  # the parents run here too
    _total(app)
    Worker(app, burst=True, queues=["claimed"]).run(install_signals=False)
    callback = app.backend.job_get_many([waiting["id"]])[0]
    app.close()
    assert (str(callback.state), callback.result) == ("succeeded", "2")

    rerun = run("import", str(path), "--url", target, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "imported 0 job(s)" in rerun.stdout and "12 were already there" in rerun.stdout


def test_a_bad_line_is_refused_and_nothing_is_written(
    two_stores: tuple[str, str], tmp_path: Path
) -> None:
    source, target = two_stores
    lines = [json.dumps(d) for d in _export(source, tmp_path)]
    cases = {
        "not JSON": [*lines[:2], "{oops", *lines[2:]],
        "unknown state 'bogus'": [lines[0], lines[1], json.dumps({**json.loads(lines[2]), "state": "bogus"})],
        "'max_attempts' must be int": [
            lines[0], lines[1], json.dumps({**json.loads(lines[2]), "max_attempts": "5"})
        ],
        "secret arguments that export masked": [
            lines[0], lines[1], json.dumps({**json.loads(lines[2]), "secrets_masked": True})
        ],
    }  # fmt: skip
    for fragment, text in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(text) + "\n")
        proc = run("import", str(path), "--url", target, cwd=tmp_path)
        assert_one_error(proc, 1, "line 3 of", fragment)
        if not target.startswith("sqlite"):
            assert _count(target) == 0
        else:  # the store is not even created for a file that cannot be imported
            assert not Path(target.removeprefix("sqlite:///")).exists()


def test_masked_secret_arguments_are_refused_but_a_backup_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Export masks secret arguments (it never holds the ciphertext), so import refuses
    such a job rather than run it with "•••"; restore carries the sealed value whole."""
    key = "k1:" + base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", key)
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    app = conveyor.App(url)

    @app.task(name="shop.charge", secret=["card"])
    def charge(card: str) -> None: ...

    plain = app.task(name="shop.note")(lambda text: None)
    plain.enqueue("hello")
    sealed = charge.enqueue("4111-PLAIN").id
    app.backend.backup(str(tmp_path / "b.db"))
    app.close()
    lines = _export(url, tmp_path)
    assert [d["secrets_masked"] for d in lines] == [False, True]
    assert "4111-PLAIN" not in json.dumps(lines)
    path = tmp_path / "shop.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    target = f"sqlite:///{tmp_path / 'other.db'}"
    proc = run("import", str(path), "--url", target, cwd=tmp_path)
    assert_one_error(proc, 1, "line 2 of", "secret arguments that export masked")
    into = run("restore", str(tmp_path / "b.db"), "--into", target, cwd=tmp_path)
    assert into.returncode == 0, into.stderr
    source, copy = conveyor.App(url), conveyor.App(target)
    try:
        [before] = source.backend.job_get_many([sealed])
        [after] = copy.backend.job_get_many([sealed])
        assert after.payload == before.payload and '"$secret"' in after.payload
    finally:
        source.close()
        copy.close()


def test_a_waiting_job_without_its_parents_is_refused(
    two_stores: tuple[str, str], tmp_path: Path
) -> None:
    """``export --state waiting`` leaves the parents behind: imported alone, the
    callback would wait forever, so the line is refused; with its parents already in
    the store it imports."""
    source, target = two_stores
    waiting = _export(source, tmp_path, "--state", "waiting")
    path = tmp_path / "waiting.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in waiting))
    proc = run("import", str(path), "--url", target, cwd=tmp_path)
    assert_one_error(proc, 1, "line 1 of", "which is neither in the file nor in the store")
    if target.startswith("sqlite"):
        assert not Path(target.removeprefix("sqlite:///")).exists()
    else:
        assert _count(target) == 0
    parents = _export(source, tmp_path, "--state", "queued")
    first = tmp_path / "parents.jsonl"
    first.write_text("".join(json.dumps(d) + "\n" for d in parents))
    assert run("import", str(first), "--url", target, cwd=tmp_path).returncode == 0
    done = run("import", str(path), "--url", target, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "imported 1 job(s)" in done.stdout
