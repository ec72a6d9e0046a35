"""qler, the seed-000 system. Not runnable here: every qler release on PyPI (0.5.0,
0.5.1) requires Python >= 3.12, and the suite runs every arm on one interpreter
(Python 3.11, conveyor's floor) so that no arm gets a faster Python.
"""

from __future__ import annotations

from bench.arms.base import Arm, Variant

REASON = (
    "not installable: qler 0.5.0/0.5.1 require Python >= 3.12; the suite runs every "
    "arm on the same Python 3.11"
)


class QlerArm(Arm):
    @classmethod
    def unavailable(cls, variant: Variant) -> str | None:
        return REASON


ARM = QlerArm
VARIANTS = [Variant("qler", "qler_arm", "sqlite", "worker", 1, "qler Worker (not run)")]
