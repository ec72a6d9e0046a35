"""`import conveyor` stays light: optional parts are extras, imported only when used."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("redis", "pydantic", "starlette", "uvicorn", "prometheus_client", "matplotlib")


def test_import_conveyor_loads_no_optional_dependency() -> None:
    code = "import sys, json, conveyor; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert "conveyor.backends.sqlite.backend" not in json.loads(out.stdout)  # opened lazily
    assert "asyncio" not in loaded  # ~25 ms; only the asyncio twins need it, when awaited
