"""Secret arguments end to end: a real worker process gets the plaintext; the store,
``conveyor jobs``, ``conveyor job ID``, ``conveyor export`` and the dashboard never hold
it; an old key still opens after a new one is prepended; a missing or wrong key sends
the job to ``dead`` with the reason instead of running it."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.secrets import SecretKeyError
from conveyor.states import JobState
from tests.integration.cli_run import clean_env
from tests.integration.cli_run import conveyor as run_conveyor
from tests.integration.test_cli_output import tty, visible

pytestmark = pytest.mark.slow

CARD = "4111-PLAIN-CARD-77"
TOKEN = "tok-PLAIN-9f3e"

SHOP = """
import pathlib

import conveyor

app = conveyor.App("sqlite:///shop.db")


@app.task(name="shop.charge", secret=["card"])
def charge(card: str, amount: int, token: conveyor.Secret[str] = "") -> str:
    with pathlib.Path("seen.txt").open("a") as seen:
        seen.write(f"{card}|{amount}|{token}\\n")
    return "charged"
"""


def _key(key_id: str) -> str:
    return f"{key_id}:{base64.b64encode(os.urandom(32)).decode()}"


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[conveyor.App]:
    """The project on disk (for the worker and the CLI) and the same app in this
    process (the producer), both on ``shop.db`` in the test's directory."""
    (tmp_path / "shop.py").write_text(SHOP.lstrip())
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "shop_producer"}
    exec(compile(SHOP, "shop.py", "exec"), namespace)
    app = namespace["app"]
    assert isinstance(app, conveyor.App)
    yield app
    app.close()


def _charge(app: conveyor.App) -> conveyor.Task:  # type: ignore[type-arg]
    return app.tasks["shop.charge"]


def _worker(tmp_path: Path, keys: str) -> None:
    proc = run_conveyor(
        "worker", "shop:app", "--burst", cwd=tmp_path, env=clean_env(CONVEYOR_SECRET_KEYS=keys)
    )
    assert proc.returncode == 0, proc.stderr


def _cli(tmp_path: Path, *args: str) -> str:
    proc = run_conveyor(*args, "--url", "sqlite:///shop.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_worker_gets_plaintext_and_nothing_else_shows_it(
    shop: conveyor.App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = _key("k1")
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", keys)
    job = _charge(shop).enqueue(CARD, 12, token=TOKEN)
    stored = job.refresh().payload
    assert CARD not in stored and TOKEN not in stored
    assert json.loads(stored)["args"][0]["$secret"].startswith("k1:")

    _worker(tmp_path, keys)
    assert job.refresh().state is JobState.SUCCEEDED
    assert (tmp_path / "seen.txt").read_text() == f"{CARD}|12|{TOKEN}\n"

    listing = _cli(tmp_path, "jobs")
    detail = _cli(tmp_path, "job", job.id)
    as_json = _cli(tmp_path, "jobs", "--json")
    export = _cli(tmp_path, "export")
    for shown in (listing, detail, as_json, export):
        assert CARD not in shown and TOKEN not in shown
    assert "•••" in listing and "•••" in detail
    for args, columns in ((("jobs",), 200), (("job", job.id), 100)):  # in a terminal too
        on_screen = visible(tty("sqlite:///shop.db", *args, columns=columns))
        assert "•••" in on_screen and CARD not in on_screen and TOKEN not in on_screen
    masked = {"args": ["•••", 12], "kwargs": {"token": "•••"}}
    assert json.loads(as_json)["jobs"][0]["payload"] == masked
    assert json.loads(export.splitlines()[0])["payload"] == masked

    from starlette.testclient import TestClient

    from conveyor.web import create_app

    with TestClient(create_app(shop), base_url="http://127.0.0.1") as client:
        for page in ("/jobs", f"/jobs/{job.id}"):
            html = client.get(page).text
            assert CARD not in html and TOKEN not in html, page
            assert "•••" in html, page
        refused = client.get("/jobs", params={"where": f"kwargs.token={TOKEN}"}).text
        assert "where ignored" in refused and "secret argument" in refused

    shop.close()
    for path in tmp_path.glob("shop.db*"):
        data = path.read_bytes()
        assert CARD.encode() not in data and TOKEN.encode() not in data, path


def test_where_on_a_secret_argument_is_an_error(
    shop: conveyor.App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", _key("k1"))
    _charge(shop).enqueue(CARD, 1, token=TOKEN)
    for field in (f"kwargs.token={TOKEN}", f"args.0={CARD}"):
        for command in (("jobs",), ("export",), ("delete", "--yes")):
            proc = run_conveyor(
                *command, "--where", field, "--url", "sqlite:///shop.db", cwd=tmp_path
            )
            assert proc.returncode != 0, (command, proc.stdout)
            assert "secret argument" in proc.stderr, proc.stderr
            assert len(proc.stderr.splitlines()) == 1, proc.stderr  # no note before it
    # a plain field of the same task is still queryable
    assert "shop.charge" in _cli(tmp_path, "jobs", "--where", "args.1=1")


def test_rotation_old_key_still_opens_after_a_new_one_is_prepended(
    shop: conveyor.App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _key("old"), _key("new")
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", old)
    first = _charge(shop).enqueue("card-one", 1)
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", f"{new},{old}")
    second = _charge(shop).enqueue("card-two", 2)
    assert json.loads(second.refresh().payload)["args"][0]["$secret"].startswith("new:")
    _worker(tmp_path, f"{new},{old}")
    assert first.refresh().state is JobState.SUCCEEDED
    assert second.refresh().state is JobState.SUCCEEDED
    assert sorted((tmp_path / "seen.txt").read_text().splitlines()) == [
        "card-one|1|",
        "card-two|2|",
    ]


def test_missing_or_wrong_key_sends_the_job_dead_with_the_reason(
    shop: conveyor.App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the worker has another key under another id, then another key under the same id
    for keys, reason in (
        (_key("k2"), "not in $CONVEYOR_SECRET_KEYS"),
        (_key("k1"), "does not open"),
    ):
        monkeypatch.setenv("CONVEYOR_SECRET_KEYS", _key("k1"))
        job = _charge(shop).enqueue(CARD, 1)
        _worker(tmp_path, keys)
        record = job.refresh()
        assert record.state is JobState.DEAD
        assert "secret argument 'card' cannot be opened" in (record.error or "")
        assert reason in (record.error or "")
        assert not (tmp_path / "seen.txt").exists()


def test_a_worker_whose_task_declares_no_secret_refuses_sealed_arguments(
    shop: conveyor.App, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = _key("k1")
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", keys)
    job = _charge(shop).enqueue(CARD, 1, token=TOKEN)
    # the worker runs an older definition of the task, without secret parameters
    (tmp_path / "shop.py").write_text(
        SHOP.replace(', secret=["card"]', "").replace("conveyor.Secret[str]", "str").lstrip()
    )
    _worker(tmp_path, keys)
    record = job.refresh()
    assert record.state is JobState.DEAD
    assert "args[0], kwargs.token sealed (secret)" in (record.error or "")
    assert not (tmp_path / "seen.txt").exists()


def test_producer_without_keys_gets_a_clear_error_and_writes_nothing(
    shop: conveyor.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONVEYOR_SECRET_KEYS", raising=False)
    with pytest.raises(SecretKeyError, match="no secret keys: set \\$CONVEYOR_SECRET_KEYS"):
        _charge(shop).enqueue(CARD, 1)
    monkeypatch.setenv("CONVEYOR_SECRET_KEYS", "k1:" + base64.b64encode(b"short").decode())
    with pytest.raises(SecretKeyError, match="32 bytes"):
        _charge(shop).enqueue(CARD, 1)
    from conveyor.backends.base import JobListParams

    assert shop.backend.job_list(JobListParams(limit=10)) == []
