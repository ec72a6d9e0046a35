"""The arm registry, the fairness checklist's per-arm lines and the async producer
helper of the peers added by issue 26 (pgqueuer, SAQ, streaq, taskiq). No peer library
is imported and no process is started: the arms themselves run in ``python -m bench``
(bench/NOTES.md has the smoke figures)."""

from __future__ import annotations

import asyncio
import contextlib
import doctest
import os
import sys
from collections.abc import AsyncIterator

import pytest

try:
    from bench import arms, fairness, many_queues, server_cost
    from bench.arms import aio, base
except ImportError as exc:  # psutil / rich: the [bench] extra
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(
        f"bench dependencies missing ({exc}): pip install -e '.[bench]'", allow_module_level=True
    )

NEW = {
    "pgqueuer": "pgqueuer_arm",
    "saq": "saq_arm",
    "streaq": "streaq_arm",
    "taskiq-redis": "taskiq_arm",
}


def test_new_peers_are_known_in_the_default_run_and_use_the_right_server() -> None:
    for name, family in NEW.items():
        assert arms.family_of(name) == family
        assert name in arms.FULL and name not in arms.QUICK
    assert arms.needs_postgres("pgqueuer") and not arms.needs_redis("pgqueuer")
    for name in ("saq", "streaq", "taskiq-redis"):
        assert arms.needs_redis(name) and not arms.needs_postgres(name), name


def test_a_postgres_arm_runs_on_the_fsync_off_cluster_under_a_labelled_name() -> None:
    name = "pgqueuer" + arms.FSYNC_OFF
    assert arms.family_of(name) == "pgqueuer_arm" and arms.base_name(name) == "pgqueuer"
    assert arms.fsync_off(name) and not arms.fsync_off("pgqueuer")
    assert arms.needs_postgres(name) and arms.needs_postgres("conveyor-postgres-thread+fsync-off")
    with pytest.raises(KeyError, match="PostgreSQL arms only"):
        arms.family_of("saq" + arms.FSYNC_OFF)  # no fsync-off cluster for a Redis arm


def test_arq_runs_from_its_own_venv_and_every_other_arm_from_the_bench_one() -> None:
    # arq 0.28 wants redis-py < 6, the bench venv has 8 (taskiq-redis 1.2).
    assert arms.family_of("arq") == "arq_arm" and arms.needs_redis("arq")
    assert arms.python_for("taskiq-redis") == sys.executable
    own = os.path.join(".venv-bench-arq", "bin", "python")
    assert arms.python_for("arq").endswith(own) or arms.python_for("arq") == sys.executable


def test_durability_defaults_by_storage_and_a_variant_may_say_more() -> None:
    redis = base.Variant("r", "r", "redis", "solo", 1, "")
    assert "no AOF" in base.durability(redis)
    assert "synchronous_commit" in base.durability(base.Variant("p", "p", "postgres", "x", 1, ""))
    said = base.Variant("s", "s", "sqlite", "x", 1, "", durability="every commit fsynced")
    assert base.durability(said) == "every commit fsynced"


def test_checklist_prints_each_available_arms_settings_and_durability() -> None:
    checks = {
        "saq": {"available": True, "config": "saq settings", "durability": "no fsync"},
        "gone": {"available": False, "config": "never ran", "durability": "x"},
    }
    lines = fairness.checklist({"warmup": 0, "iterations": 1}, checks, None)
    assert "  saq: saq settings; durability: no fsync" in lines
    assert not any("gone" in line for line in lines)


class _Session:
    """An async context manager that, like streaq's Worker, must be left in the task
    that entered it; records the task each step ran in."""

    def __init__(self) -> None:
        self.tasks: list[object] = []

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        self.tasks.append(asyncio.current_task())
        yield
        self.tasks.append(asyncio.current_task())

    async def call(self, value: int) -> int:
        self.tasks.append(asyncio.current_task())
        if value < 0:
            raise ValueError(value)
        return value * 2


def test_async_arm_runs_every_call_in_the_task_that_holds_the_session() -> None:
    session = _Session()
    arm = aio.AsyncArm(base.Variant("x", "x", "redis", "asyncio", 1, ""))
    arm.start_loop(session=session.held())
    assert arm.run(session.call(2)) == 4
    with pytest.raises(ValueError):
        arm.run(session.call(-1))  # an error reaches the caller; the session goes on
    assert arm.run(session.call(3)) == 6
    arm.stop_loop()
    assert len(session.tasks) == 5 and len(set(map(id, session.tasks))) == 1


@pytest.mark.parametrize("module", [aio, base, arms, many_queues, server_cost])
def test_doctests(module: object) -> None:
    assert doctest.testmod(module).failed == 0  # type: ignore[arg-type]
