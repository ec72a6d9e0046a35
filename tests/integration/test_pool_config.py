"""Pool configuration errors are clear and come at start, never in the middle of a job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import conveyor
from conveyor.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("pool", ["process", "interpreter"])
def test_child_pools_need_the_app_spec(pool: str) -> None:
    if pool == "interpreter" and sys.version_info < (3, 13):
        pytest.skip("interpreter pool needs Python >= 3.13 (see the next test)")
    app = conveyor.App("sqlite:///:memory:")
    with pytest.raises(ConfigurationError, match="module:attr"):
        conveyor.Worker(app, pool=pool)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="checks the error on Python < 3.13")
def test_interpreter_pool_needs_python_313() -> None:
    app = conveyor.App("sqlite:///:memory:")
    with pytest.raises(ConfigurationError, match=r"needs Python >= 3.13.*--pool process"):
        conveyor.Worker(app, pool="interpreter", app_spec="x:app")


def test_max_memory_is_for_the_process_pool_only() -> None:
    if sys.version_info < (3, 13):
        pytest.skip("interpreter pool needs Python >= 3.13")
    app = conveyor.App("sqlite:///:memory:")
    with pytest.raises(ConfigurationError, match="process only"):
        conveyor.Worker(app, pool="interpreter", app_spec="x:app", max_memory_per_child=100)


@pytest.mark.skipif(
    sys.version_info < (3, 13), reason="interpreter pool needs Python >= 3.13 (run .ci/pools313)"
)
def test_incompatible_module_fails_the_worker_at_start(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CONVEYOR_URL": f"sqlite:///{tmp_path / 'jobs.db'}",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from conveyor.cli.main import main; main()",
            "worker",
            "tests.integration.pool_tasks_incompatible:app",
            "--pool",
            "interpreter",
            "-c",
            "2",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "pydantic_core" in proc.stderr
    assert "--pool process" in proc.stderr
    assert "Traceback" not in proc.stderr  # a message, not a crash
