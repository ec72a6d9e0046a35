"""`import conveyor` stays light: optional parts are extras, imported only when used."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "redis",
    "pydantic",
    "starlette",
    "uvicorn",
    "prometheus_client",
    "matplotlib",
    "django",  # checked where it is installed: .ci/django312 runs this test too
)


def test_import_conveyor_loads_no_optional_dependency() -> None:
    code = "import sys, json, conveyor; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert "conveyor.backends.sqlite.backend" not in json.loads(out.stdout)  # opened lazily
    assert "asyncio" not in loaded  # ~25 ms; only the asyncio twins need it, when awaited


#: Modules the cold path (import, enqueue, run one sync job on SQLite) must not import:
#: each cost 4-25 ms of the W5 "first job done" budget and none is needed there.
COLD_PATH_AVOIDS = ("asyncio", "ctypes", "uuid", "decimal", "socket", "importlib.resources")


def test_first_sync_job_on_sqlite_imports_nothing_it_does_not_need(tmp_path: object) -> None:
    code = f"""
import json, sys, conveyor
from conveyor.worker.worker import Worker
app = conveyor.App("sqlite:///{tmp_path}/cold.db")

@app.task
def add(a: int, b: int) -> int:
    return a + b

job = add.enqueue(1, 2)
Worker(app, burst=True).run()
assert job.result() == 3
print(json.dumps(sorted(sys.modules)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert loaded.isdisjoint(COLD_PATH_AVOIDS), sorted(loaded & set(COLD_PATH_AVOIDS))
