"""Sequence and fairness options are checked when a task is declared, one line each."""

from __future__ import annotations

import pytest

import conveyor
from conveyor.errors import ConfigurationError


def test_seq_options_checked_at_declaration() -> None:
    app = conveyor.App("memory://")
    with pytest.raises(ConfigurationError, match="on_failure must be 'block' or 'skip'"):
        app.task(sequence_key="k", on_failure="retry")(lambda: None)
    with pytest.raises(ConfigurationError, match="give sequence_key too"):
        app.task(on_failure="skip")(lambda: None)
    with pytest.raises(ConfigurationError, match="sequence_key must be"):
        app.task(sequence_key=3)(lambda: None)


def test_fair_options_checked_at_declaration() -> None:
    app = conveyor.App("memory://")
    with pytest.raises(ConfigurationError, match="give fair_key too"):
        app.task(fair_weights={"a": 2})(lambda: None)
    with pytest.raises(ConfigurationError, match="fair weight of 'a' must be in"):
        app.task(fair_key="k", fair_weights={"a": 0})(lambda: None)
    with pytest.raises(ConfigurationError, match="fair_key or sequence_key, not both"):
        app.task(fair_key="k", sequence_key="s")(lambda: None)


def test_debounce_options_checked_at_declaration() -> None:
    app = conveyor.App("memory://")
    with pytest.raises(ConfigurationError, match="need a unique_key"):
        app.task(debounce=5)(lambda: None)
    with pytest.raises(ConfigurationError, match="max_wait caps a debounce"):
        app.task(unique_key="k", max_wait=5)(lambda: None)
    with pytest.raises(ConfigurationError, match="max_wait must be >= debounce"):
        app.task(unique_key="k", debounce=10, max_wait=5)(lambda: None)
    with pytest.raises(ConfigurationError, match="debounce or throttle, not both"):
        app.task(unique_key="k", debounce=1, throttle=1)(lambda: None)
    with pytest.raises(ConfigurationError, match="throttle sets unique_for itself"):
        app.task(unique_key="k", throttle=1, unique_for=5)(lambda: None)


def test_sequences_and_fairness_work_in_the_testing_modes(tmp_path: object) -> None:
    app = conveyor.App(f"sqlite:///{tmp_path}/t.db")
    ran: list[object] = []

    @app.task(sequence_key="s", max_attempts=1)
    def step(n: int) -> None:
        ran.append(n)
        if n == 1:
            raise ValueError("x")

    @app.task(fair_key=lambda tenant, n: tenant)
    def sync(tenant: str, n: int) -> None:
        ran.append(tenant)

    with app.testing("inline"):
        jobs = [step.enqueue(n) for n in range(3)]
        assert ran == [0, 1]
        assert [j.refresh().state.value for j in jobs] == ["succeeded", "dead", "waiting"]
    ran.clear()
    with app.testing("capture") as captured:
        for n in range(6):
            sync.enqueue("big", n)
        sync.enqueue("small", 0)
        captured.drain()
    assert ran.index("small") <= 2
