"""Durable jobs' proofs at small size (issue 23; full size: ``python -m
bench.durable_proofs``): sleeping jobs hold no slot of a 4-slot worker and resume within
1 s of their wake time (SQLite). The send -> resume latency runs on every store in
tests/contract/test_durable.py."""

from __future__ import annotations

from pathlib import Path

from bench.durable_proofs import sleep_proof


def test_durable_sleepers_hold_no_slot_and_resume_on_time(tmp_path: Path) -> None:
    figures = sleep_proof(f"sqlite:///{tmp_path / 's.db'}", sleepers=12, others=20, seconds=1.0)
    assert figures["others_done_before_first_wake"], figures
    assert figures["late_min"] >= 0.0 and figures["late_max"] <= 1.0, figures
