"""``conveyor migrate`` between backends (every one as source and as target: see
``DIRECTIONS``), interrupted and rerun: every job moved exactly once, with its state,
attempts and errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.backends.base import (
    IntegrityCheckParams,
    JobClaimParams,
    JobCountParams,
    JobFilter,
    JobListParams,
)
from conveyor.cli.main import cli
from conveyor.cli.migrate import MOVED, move_page
from tests.support.backends import CLI_URLS
from tests.support.stores import fill

_STORES = sorted(CLI_URLS)
#: Each store once as the source and once as the target (a ring: mariadb->postgres->
#: redis->sqlite->mariadb), and SQLite -> Redis, the move the docs name. Not all twelve
#: pairs: migrate.py and migrate_flows.py reach a store only through the Backend API, the
#: source's reads and deletes and the target's job_import_many, so no code belongs to a
#: pair; the ring runs each store's side of both. What a target does with an import
#: (ids present skipped, unique keys, workflows, steps) is tests/contract/test_job_import.py
#: on every store. The other seven pairs cost about a minute of make test.
DIRECTIONS = sorted(
    {f"{a}->{b}" for a, b in zip(_STORES, _STORES[1:] + _STORES[:1], strict=True)}
    | ({"sqlite->redis"} & {f"{a}->{b}" for a, b in itertools.permutations(_STORES, 2)})
)


def _moved(url: str) -> list[str]:
    app = conveyor.App(url)
    try:
        return [
            j.id
            for j in app.backend.job_list(JobListParams(limit=1000, filter=JobFilter(states=MOVED)))
        ]
    finally:
        app.close()


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_migrate_moves_jobs_and_reruns_cleanly(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    a, b = direction.split("->")
    (tmp_path / "from").mkdir()
    (tmp_path / "to").mkdir()
    source = CLI_URLS[a](request, tmp_path / "from")
    target = CLI_URLS[b](request, tmp_path / "to")
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


def _workflow_tasks(app: conveyor.App) -> tuple[conveyor.Task, conveyor.Task]:  # type: ignore[type-arg]
    @app.task(name="t.tens")
    def tens(x: int, y: int = 0) -> int:
        return x * 10 + y

    @app.task(name="t.total")
    def total(values: list[int]) -> int:
        return sum(values)

    return tens, total


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_migrate_moves_workflows_whole_and_they_run_on_the_target(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    a, b = direction.split("->")
    (tmp_path / "from").mkdir()
    (tmp_path / "to").mkdir()
    source = CLI_URLS[a](request, tmp_path / "from")
    target = CLI_URLS[b](request, tmp_path / "to")
    src = conveyor.App(source)
    tens, total = _workflow_tasks(src)
    chained = conveyor.chain(tens.s(1), tens.s(y=2)).enqueue()  # 1 -> 10 -> 102
    early = tens.with_options(queue="early").s(1)
    grouped = conveyor.group(early, tens.s(2)).then(total.s()).enqueue()  # 10 + 20
    conveyor.Worker(src, queues=["early"], burst=True).run(install_signals=False)
    # A workflow whose parent runs on a source worker cannot move: it stays, whole.
    busy = tens.with_options(queue="busy").enqueue(5)
    stuck = tens.with_options(depends_on=[busy]).enqueue(6)
    src.backend.job_claim(JobClaimParams("w-src", [("busy", 1)], 1))
    src.close()
    result = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert result.exit_code == 0, result.output
    assert "2 job(s) of workflows with a running job stay on the source" in result.output
    src = conveyor.App(source)
    left = {j.id: j.state.value for j in src.backend.job_get_many([busy.id, stuck.id])}
    assert left == {busy.id: "running", stuck.id: "waiting"}
    assert src.backend.job_get_many([chained.id, grouped.id]) == []
    src.close()
    dst = conveyor.App(target)
    _workflow_tasks(dst)
    assert dst.backend.integrity_check(IntegrityCheckParams(30.0)) == []
    assert {j.state.value for j in dst.backend.job_get_many([chained.id, grouped.id])} == {
        "waiting"
    }
    conveyor.Worker(dst, burst=True).run(install_signals=False)
    assert conveyor.Job(dst, chained.id).result(timeout=5) == 102
    assert conveyor.Job(dst, grouped.id).result(timeout=5) == 30
    dst.close()


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_migrate_carries_unique_keys_unless_the_target_holds_them(
    direction: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    a, b = direction.split("->")
    (tmp_path / "from").mkdir()
    (tmp_path / "to").mkdir()
    source = CLI_URLS[a](request, tmp_path / "from")
    target = CLI_URLS[b](request, tmp_path / "to")
    src = conveyor.App(source)
    send = src.task(name="t.send")(lambda n: n)
    free = send.with_options(unique_key="k1").enqueue(1)
    taken = send.with_options(unique_key="k2").enqueue(2)
    src.close()
    dst = conveyor.App(target)
    resident = dst.task(name="t.send")(lambda n: n).with_options(unique_key="k2").enqueue(3)
    dst.close()
    moved = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
    assert moved.exit_code == 0 and "moved 2 job(s)" in moved.output, moved.output
    dst = conveyor.App(target)
    again = dst.task(name="t.send")(lambda n: n)
    assert again.with_options(unique_key="k1").enqueue(9).id == free.id  # the key came along
    assert again.with_options(unique_key="k2").enqueue(9).id == resident.id  # still theirs
    got = {j.id: j for j in dst.backend.job_get_many([free.id, taken.id, resident.id])}
    problems = dst.backend.integrity_check(IntegrityCheckParams(30.0))
    dst.close()
    assert problems == []
    assert got[free.id].unique_key == "k1" and got[resident.id].unique_key == "k2"
    assert got[taken.id].unique_key is None and got[taken.id].state.value == "queued"
