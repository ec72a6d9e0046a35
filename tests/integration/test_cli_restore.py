"""``conveyor restore`` and ``conveyor import``, run as a user would: the real console
script through pipes, real SQLite files, a real worker process SIGKILLed mid-job, and the
session's real Redis and PostgreSQL for ``--into`` and the export -> import round trip."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import JobClaimParams, JobListParams, JobLogListParams
from conveyor.backends.sqlite.connection import SCHEMA_VERSION, read_packaged
from conveyor.worker.worker import Worker
from tests.integration.cli_run import CONVEYOR, assert_one_error, clean_env
from tests.integration.cli_run import conveyor as run
from tests.integration.conftest import wait_for
from tests.support.backends import BACKEND_URLS
from tests.support.stores import fill

#: A project whose task records each start, then waits for a file (so a worker can be
#: killed while it runs the job).
TASKS = """
import pathlib, time
import conveyor

app = conveyor.App("sqlite:///jobs.db", heartbeat_interval=0.2, heartbeat_ttl=30)


@app.task(max_attempts=1)
def slow(tag: str) -> str:
    with open("runs.txt", "a") as f:
        f.write(tag + "\\n")
    while not pathlib.Path("go").exists():
        time.sleep(0.05)
    return tag
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "tasks.py").write_text(TASKS.lstrip())
    return tmp_path


def _worker(cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CONVEYOR), "worker", "tasks:app", *args],
        cwd=cwd,
        env=clean_env(PYTHONPATH=str(cwd)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _enqueue(url: str, task: str, *args: object, queue: str = "default") -> str:
    """Enqueue ``task`` by name (a stand-in function: only the worker runs it)."""
    app = conveyor.App(url)
    try:

        def stand_in(*args: Any) -> None:
            raise AssertionError("never run here")

        return app.task(name=task, queue=queue)(stand_in).enqueue(*args).id
    finally:
        app.close()


def _jobs(url: str) -> dict[str, dict[str, object]]:
    app = conveyor.App(url)
    try:
        got = app.backend.job_list(JobListParams(limit=1000))
        return {
            j.id: {"state": str(j.state), "attempt": j.attempt, "rescues": j.rescues} for j in got
        }
    finally:
        app.close()


def _workers(url: str) -> list[str]:
    app = conveyor.App(url)
    try:
        return [w.id for w in app.backend.worker_list()]
    finally:
        app.close()


def _outcomes(url: str, job_id: str) -> list[str]:
    app = conveyor.App(url)
    try:
        return [a.outcome for a in app.backend.job_attempts(job_id)]
    finally:
        app.close()


def test_backup_restore_brings_a_running_job_back_queued_and_it_runs_once(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    env = clean_env(PYTHONPATH=str(cwd))
    url = f"sqlite:///{cwd / 'jobs.db'}"
    job_id = _enqueue(url, "tasks.slow", "first")
    done_id = _enqueue(url, "tasks.slow", "done-before")
    (cwd / "go").write_text("")  # the first two run through...
    worker = _worker(cwd)
    try:
        wait_for(lambda: _jobs(url)[done_id]["state"] == "succeeded", what="done-before to end")
        (cwd / "go").unlink()
        stuck = _enqueue(url, "tasks.slow", "stuck")  # ...this one blocks in the worker
        wait_for(lambda: _jobs(url)[stuck]["state"] == "running", what="stuck to run")
        backup = run("backup", "backup.db", "--app", "tasks:app", cwd=cwd, env=env)
        assert backup.returncode == 0, backup.stderr
    finally:
        worker.send_signal(signal.SIGKILL)  # its claim stays in the store and the backup
        worker.wait(10)
    assert not list(cwd.glob("backup.db-*"))  # no -wal/-shm beside the backup

    # The store holds jobs and the killed worker's heartbeat is recent: refused, one line.
    refused = run("restore", "backup.db", "--app", "tasks:app", cwd=cwd, env=env)
    assert_one_error(refused, 1, "holds 3 job(s)", "worker(s) live on it", "--force")
    assert not list(cwd.glob("backup.db-*"))  # checking the backup never writes beside it

    # Meanwhile the store moved on: a job enqueued after the backup is rolled back.
    later = _enqueue(url, "tasks.slow", "after-backup")
    forced = run("restore", "backup.db", "--app", "tasks:app", "--force", cwd=cwd, env=env)
    assert forced.returncode == 0, forced.stderr
    assert "restored 3 job(s)" in forced.stdout
    assert "1 job(s) running at backup time are queued again" in forced.stdout
    assert sorted(p.name for p in cwd.iterdir() if p.name.startswith(".jobs.db")) == []
    jobs = _jobs(url)
    assert later not in jobs and set(jobs) == {job_id, done_id, stuck}
    # Back to queued, its attempt given back, no rescue counted (not a poison pill).
    assert jobs[stuck] == {"state": "queued", "attempt": 0, "rescues": 0}
    assert _outcomes(url, stuck) == ["released"]
    assert jobs[done_id]["state"] == "succeeded"
    assert (cwd / "jobs.db").stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(cwd / "jobs.db") as db:  # a whole, healthy store file
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM workers").fetchone()[0] == 0

    # Runs once more (max_attempts=1: the given-back attempt is its one try) and succeeds.
    (cwd / "go").write_text("")
    burst = _worker(cwd, "--burst")
    assert burst.wait(60) == 0
    jobs = _jobs(url)
    assert jobs[stuck] == {"state": "succeeded", "attempt": 1, "rescues": 0}
    assert _outcomes(url, stuck) == ["released", "succeeded"]
    runs = (cwd / "runs.txt").read_text().split()
    assert runs.count("stuck") == 2  # the killed run, and exactly one after the restore


def test_restore_refuses_a_store_another_process_has_open(tmp_path: Path) -> None:
    cwd = _project(tmp_path)
    env = clean_env(PYTHONPATH=str(cwd))
    url = f"sqlite:///{cwd / 'jobs.db'}"
    _enqueue(url, "tasks.slow", "one")
    app = conveyor.App(url)
    app.backend.backup(str(cwd / "backup.db"))
    _enqueue(url, "tasks.slow", "two")  # the store differs from the backup
    # This process keeps the store open, as a worker or the dashboard would.
    try:
        refused = run("restore", "backup.db", "--url", url, "--force", cwd=cwd, env=env)
        assert_one_error(refused, 1, "is open in another process", "stop it first")
        assert len(_jobs(url)) == 2  # untouched
        assert not [p for p in cwd.iterdir() if ".restore-" in p.name]  # no temp file left
    finally:
        app.close()
    # A live worker process: refused even with --force, and the refusal names it.
    (cwd / "go").write_text("")  # its jobs end at once: an idle, live worker
    worker = _worker(cwd)
    try:
        wait_for(lambda: bool(_workers(url)), what="the worker's heartbeat")
        refused = run("restore", "backup.db", "--url", url, "--force", cwd=cwd, env=env)
        assert_one_error(refused, 1, "is open in another process", "worker(s) live on it")
        assert len(_jobs(url)) == 2
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
    forced = run("restore", "backup.db", "--url", url, "--force", cwd=cwd, env=env)
    assert forced.returncode == 0, forced.stderr
    assert len(_jobs(url)) == 1


def test_restore_into_a_new_store_needs_no_force(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    fill(url)
    app = conveyor.App(url)
    app.backend.backup(str(tmp_path / "b.db"))
    app.close()
    fresh = tmp_path / "new" / "fresh.db"
    done = run("restore", str(tmp_path / "b.db"), "--url", f"sqlite:///{fresh}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _jobs(f"sqlite:///{fresh}") == _jobs(url)
    # A file that is no conveyor store is not overwritten by mistake either.
    notes = tmp_path / "notes.db"
    with sqlite3.connect(notes) as db:
        db.execute("CREATE TABLE notes (x)")
    refused = run("restore", str(tmp_path / "b.db"), "--url", f"sqlite:///{notes}", cwd=tmp_path)
    assert_one_error(refused, 1, "exists but is not a conveyor store", "--force")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"this is no database " * 400, "is not a SQLite database"),
        (None, "not a conveyor store"),  # a SQLite file of someone else's
        (b"", "not a conveyor store"),  # an empty file
        ("newer", f"newer than this conveyor's {SCHEMA_VERSION}"),
        ("torn", "is damaged"),
    ],
)
def test_a_bad_backup_is_refused_with_one_line(
    tmp_path: Path, content: bytes | str | None, fragment: str
) -> None:
    bad = tmp_path / "bad.db"
    if content is None:
        with sqlite3.connect(bad) as db:
            db.execute("CREATE TABLE notes (x)")
    elif content == "newer":
        _enqueue(f"sqlite:///{tmp_path / 'src.db'}", "t.x")
        app = conveyor.App(f"sqlite:///{tmp_path / 'src.db'}")
        app.backend.backup(str(bad))
        app.close()
        with sqlite3.connect(bad) as db:
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    elif content == "torn":
        for n in range(300):
            _enqueue(f"sqlite:///{tmp_path / 'src.db'}", "t.x", "x" * 500, n)
        app = conveyor.App(f"sqlite:///{tmp_path / 'src.db'}")
        app.backend.backup(str(bad))
        app.close()
        data = bytearray(bad.read_bytes())
        page = 4096
        # Scribble over a b-tree page in the middle (not the header): a torn copy.
        data[page * 5 : page * 5 + 200] = b"\xff" * 200
        bad.write_bytes(bytes(data))
    else:
        bad.write_bytes(content)
    target = tmp_path / "jobs.db"
    for args in ((), ("--into", f"sqlite:///{tmp_path / 'other.db'}")):
        proc = run("restore", str(bad), "--url", f"sqlite:///{target}", *args, cwd=tmp_path)
        assert_one_error(proc, 1, fragment)
    assert not target.exists() and not (tmp_path / "other.db").exists()
    missing = run("restore", "nope.db", "--url", f"sqlite:///{target}", cwd=tmp_path)
    assert_one_error(missing, 1, "no backup file at nope.db")


def test_restore_names_the_way_for_a_store_that_is_not_sqlite(tmp_path: Path) -> None:
    _enqueue(f"sqlite:///{tmp_path / 'src.db'}", "t.x")
    app = conveyor.App(f"sqlite:///{tmp_path / 'src.db'}")
    app.backend.backup(str(tmp_path / "b.db"))
    app.close()
    proc = run("restore", "b.db", "--url", "redis://127.0.0.1:1/0", cwd=tmp_path)
    assert_one_error(proc, 1, "is not SQLite", "--into URL")


def _claimed_backup(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    """A backup of the ops CLI's store plus one job claimed by a worker that is gone."""
    url = f"sqlite:///{tmp_path / 'src.db'}"
    ids = fill(url)
    claimed = _enqueue(url, "t.work", 7, queue="claimed")
    app = conveyor.App(url)
    got = app.backend.job_claim(JobClaimParams("w-gone", [("claimed", 1)], 1))
    assert [c.id for c in got] == [claimed]

    @app.task(name="t.step", queue="flow")
    def step(x: int) -> int:
        return x

    # A chain: its second step waits on the first, piped its result.
    ids["chained"] = conveyor.chain(step.s(1), step.s()).enqueue().id
    backup = tmp_path / "b.db"
    app.backend.backup(str(backup))
    app.close()
    return backup, ids, claimed


@pytest.mark.parametrize("kind", sorted(BACKEND_URLS))
def test_restore_into_any_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    backup, ids, claimed = _claimed_backup(tmp_path)
    before = backup.read_bytes()
    (tmp_path / "t").mkdir()
    target = BACKEND_URLS[kind](request, tmp_path / "t")
    first = run("restore", str(backup), "--into", target, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "restored 9 job(s)" in first.stdout and "1 job(s) running at backup time" in first.stdout
    assert backup.read_bytes() == before  # the backup itself is never written
    jobs = _jobs(target)
    assert set(jobs) >= {*ids.values(), claimed} and len(jobs) == 9  # and the chain's head
    assert jobs[claimed] == {"state": "queued", "attempt": 0, "rescues": 0}
    assert jobs[ids["x-1"]]["state"] == "dead" and jobs[ids["x0"]]["state"] == "succeeded"
    assert jobs[ids["chained"]]["state"] == "waiting"
    app = conveyor.App(target)
    try:
        assert [a.outcome for a in app.backend.job_attempts(claimed)] == ["released"]
        assert [a.outcome for a in app.backend.job_attempts(ids["x-1"])] == ["dead"]
        logs = app.backend.job_log_list(JobLogListParams(ids["x-1"]))
        assert any("working on -1" in r.message for r in logs)
        # The chain still runs on the target: the second step is given the first's result.
        app.task(name="t.step", queue="flow")(lambda x: x)
        Worker(app, burst=True, queues=["flow"]).run(install_signals=False)
        [chained] = app.backend.job_get_many([ids["chained"]])
        assert (str(chained.state), chained.result) == ("succeeded", "1")
    finally:
        app.close()
    again = run("restore", str(backup), "--into", target, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "restored 0 job(s)" in again.stdout and "9 were already there" in again.stdout


def test_a_backup_of_an_older_schema_is_migrated_on_the_way_in(tmp_path: Path) -> None:
    """A backup taken by an older conveyor (schema version 1, before ops, flow control,
    headers and expiry): restored, migrated to this release's schema, its claim given
    back."""
    old = tmp_path / "v1.db"
    with sqlite3.connect(old) as db:
        db.executescript(read_packaged("schema.sql"))
        db.execute("PRAGMA user_version = 1")
        row = "INSERT INTO jobs (id, task, queue, state, payload, attempt, max_attempts, token, run_at, created_at, lease, worker_id, lease_until, started_at) VALUES (?, 't.x', 'default', ?, '{\"args\":[],\"kwargs\":{}}', ?, 3, ?, 1.0, 1.0, 30.0, ?, ?, ?)"  # fmt: skip
        db.execute(row, ("06A", "queued", 0, 0, None, None, None))
        db.execute(row, ("06B", "running", 1, 1, "w-old", 99.0, 50.0))
        db.execute(
            "INSERT INTO workers (id, host, pid, started_at, heartbeat_at, queues, concurrency, pool) "
            "VALUES ('w-old', 'h', 1, 1.0, 1.0, 'default', 1, 'thread')"
        )
    target = tmp_path / "jobs.db"
    done = run("restore", str(old), "--url", f"sqlite:///{target}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(target) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    url = f"sqlite:///{target}"
    assert _jobs(url) == {
        "06A": {"state": "queued", "attempt": 0, "rescues": 0},
        "06B": {"state": "queued", "attempt": 0, "rescues": 0},
    }
    assert _outcomes(url, "06B") == ["released"]
    with sqlite3.connect(old) as db:  # the backup itself is left as it was
        assert db.execute("PRAGMA user_version").fetchone()[0] == 1
