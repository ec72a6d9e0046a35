"""Weighted queue order (conveyor.worker.queues): the law of the draw, and its cost on
many queues (a claim on 5,000 queues must not pay an O(n^2) draw: bench W7)."""

from __future__ import annotations

import random
import time

from conveyor.worker.queues import QueueSelection


def test_weights_decide_which_queue_is_asked_first() -> None:
    random.seed(26)
    sel = QueueSelection.parse(["high:3", "low:1"])
    firsts = [sel.allocate(1)[0] for _ in range(20_000)]
    high = sum(1 for name, share in firsts if name == "high" and share == 1) / len(firsts)
    assert 0.73 < high < 0.77, high  # 3 / (3 + 1)


def test_every_queue_is_in_the_order_once_and_the_slots_add_up() -> None:
    sel = QueueSelection.parse([f"t{k}" for k in range(50)] + ["big:5"])
    shares = sel.allocate(12)
    assert sorted(name for name, _ in shares) == sorted(sel.names)
    assert sum(share for _, share in shares) == 12


def test_an_order_over_5000_queues_is_linear_time_not_quadratic() -> None:
    sel = QueueSelection.parse([f"t{k}" for k in range(4_999)] + ["vip:2"])
    start = time.perf_counter()
    for _ in range(10):
        sel.allocate(10)
    # The draw-one-at-a-time order took ~1 s per call here; the sort takes ~5 ms.
    assert (time.perf_counter() - start) / 10 < 0.1
