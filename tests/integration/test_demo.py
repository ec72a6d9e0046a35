"""`make demo` (the README's first command): the Python it picks, what it installs, and
`conveyor demo` itself end to end on a fresh directory, including the commands it prints."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")
needs_make = pytest.mark.skipif(
    MAKE is None and os.environ.get("CI") != "true", reason="make not on PATH"
)


def test_demo_runs_every_job_and_reports_them(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CONVEYOR_URL", "CONVEYOR_DEMO_URL")}
    proc = subprocess.run(
        [sys.executable, "-m", "conveyor.cli", "demo", "--jobs", "300"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "demo summary" in proc.stdout
    db = tmp_path / ".conveyor-demo" / "demo.db"
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
        retried = conn.execute("SELECT COUNT(*) FROM jobs WHERE attempt > 1").fetchone()[0]
        dead_id = conn.execute("SELECT id FROM jobs WHERE state = 'dead'").fetchone()[0]
    # 300 jobs: 2 doomed (dead after 2 attempts), the rest succeed; flaky ones retried.
    assert counts == {"succeeded": 298, "dead": 2}
    assert retried >= 30
    row = re.search(r"│\s*300\s*│\s*298\s*│\s*(\d+)\s*│\s*2\s*│", proc.stdout)
    assert row is not None and int(row.group(1)) == retried

    # It says the failures are deliberate, with the demo's own numbers.
    text = " ".join(proc.stdout.split())
    assert "The failures are deliberate" in text
    assert "30 demo.flaky jobs raise ConnectionError" in text
    assert "2 demo.doomed jobs always raise ValueError" in text and "dead on purpose" in text

    # Every command it prints works as printed, from that directory, in the same shell.
    commands = _printed_commands(proc.stdout)
    assert any(" status --url sqlite:///.conveyor-demo/demo.db" in c for c in commands)
    assert any(c.endswith(dead_id) for c in commands)
    for command in commands:
        ran = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0, f"{command}\n{ran.stdout}{ran.stderr}"
        assert ran.stdout.strip(), command


def _printed_commands(stdout: str) -> list[str]:
    """The indented lines after "Look further" (one command each, never wrapped)."""
    after = stdout.split("Look further", 1)[1].split("\n")[1:]
    return [line.strip() for line in after if line.startswith("  ") and line.strip()]


def _fake_pythons(bin_dir: Path, **scripts: str) -> None:
    """A PATH with the given scripts and the few tools make's recipes call, no Python."""
    bin_dir.mkdir()
    for tool in ("echo", "head", "sh", "touch"):
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)


@needs_make
def test_make_picks_the_first_python_that_is_at_least_3_11(tmp_path: Path) -> None:
    # A pyenv shim for a version that is not selected fails; an old Python says no.
    bin_dir = tmp_path / "bin"
    _fake_pythons(
        bin_dir,
        **{"python3.13": "echo 'pyenv: python3.13: command not found' >&2; exit 127"},
        **{"python3.12": "exit 1"},
    )
    (bin_dir / "python3").symlink_to(sys.executable)
    proc = subprocess.run(
        [str(MAKE), "-s", "-C", str(ROOT), "print-python"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "python3"


@needs_make
def test_make_says_plainly_when_no_python_is_new_enough(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _fake_pythons(bin_dir, **{"python3.11": "exit 1", "python3": "exit 1"})
    proc = subprocess.run(
        [str(MAKE), "-s", "-C", str(ROOT), "demo", f"VENV={tmp_path / 'venv'}"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert (
        "no Python >= 3.11 found on PATH (tried: python3.13 python3.12 python3.11 python3)"
        in proc.stderr
    )
    assert "make PY=/path/to/python3.12 demo" in proc.stderr
    assert not (tmp_path / "venv").exists()


@needs_make
def test_demo_installs_the_package_alone_and_test_upgrades_that_venv(tmp_path: Path) -> None:
    # A venv made by `make demo` (its stamp newer than pyproject.toml) is given the dev
    # and bench extras by `make test`; the demo's own install has no extras.
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / ".installed-demo").touch()

    def dry_run(target: str) -> str:
        proc = subprocess.run(
            [str(MAKE), "-n", "-C", str(ROOT), target, f"VENV={venv}"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    demo = dry_run("demo")
    assert "pip install" not in demo  # already installed: straight to the demo
    assert f"{venv}/bin/conveyor demo" in demo
    assert f"{venv}/bin/pip install -q -e '.[dev,bench]'" in dry_run("test")
    (venv / ".installed-demo").unlink()
    assert re.search(rf"{venv}/bin/pip install -q -e \.\n", dry_run("demo"))
