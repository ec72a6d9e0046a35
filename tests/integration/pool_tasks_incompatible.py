"""A task module that cannot load in a subinterpreter: it imports ``pydantic_core``, a
PyO3 C extension without per-interpreter GIL support (true as of pydantic-core 2.x)."""

from __future__ import annotations

import pydantic_core  # noqa: F401  (the point of this module)

import conveyor

app = conveyor.App("sqlite:///:memory:")


@app.task(name="incompatible.noop")
def noop() -> None:
    return None
