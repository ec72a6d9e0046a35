"""``python -m bench.instructions --write`` rewrites only this Python's table of
bench/budget.toml (limit = measured + the path's margin), keeps every other line, and
writing the same figures twice changes nothing. No valgrind needed: figures are given."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from bench import instructions

MEASURED = {
    "enqueue_single": 1000.0,
    "enqueue_batch": 500.0,
    "claim_run_finish": 2000.0,
    "cold_start": 1e8,
    "python_start": 3e7,
}


def test_write_replaces_only_this_pythons_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = tmp_path / "budget.toml"
    other = '[instructions."2.7"]\nenqueue_single = 1\n'
    budget.write_text("[sqlite]\nstatements = 0.5\n\n" + other)
    monkeypatch.setattr(instructions, "BUDGET", budget)
    instructions.write(MEASURED)
    once = budget.read_text()
    instructions.write({**MEASURED, "enqueue_single": 2000.0})
    instructions.write(MEASURED)
    assert budget.read_text() == once  # idempotent, and a rewrite replaces the table
    table = tomllib.loads(once)
    assert table["sqlite"] == {"statements": 0.5}
    assert table["instructions"]["2.7"] == {"enqueue_single": 1}
    mine = instructions.limits()
    assert mine["enqueue_single"] == 1100 and mine["claim_run_finish"] == 2400
    assert set(mine) == {"enqueue_single", "enqueue_batch", "claim_run_finish", "cold_start"}
    assert instructions.over_budget({**MEASURED, "enqueue_batch": 551.0}, mine) == {
        "enqueue_batch": (551.0, 550.0)
    }
