"""Mistakes a new user makes, through the real console script and pipes: each is one
``Error:`` line on stderr with exit status 2 (usage) or 1 (runtime); ``--debug`` and
``CONVEYOR_DEBUG=1`` add the traceback; read-only commands never create a store; resolving
APP never calls anything; Redis down or a wrong password is one line too."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.integration.cli_run import (
    assert_one_error,
    clean_env,
    conveyor,
    write_project,
)
from tests.support.redis_server import RedisServer, free_port


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path)


@pytest.fixture
def store(project: Path) -> str:
    """A real store with one queued job (created by a producer, as a user would)."""
    subprocess.run(
        [sys.executable, "-c", "import tasks; tasks.hello.enqueue('x')"],
        cwd=project,
        env=clean_env(),
        check=True,
        timeout=60,
    )
    return f"sqlite:///{project / 'a.db'}"


@pytest.mark.parametrize(
    ("args", "status", "fragments"),
    [
        (["worker", "nosuchmodule:app"], 1, ["no module named 'nosuchmodule'", "PYTHONPATH"]),
        (["status", "--url", "sqlite://x"], 2, ["'--url'", "has a host"]),
        (["status", "--url", "ftp://host/x"], 2, ["unsupported store URL"]),
        (["jobs", "--url", "redis://:pw@host:notaport/0"], 2, ["not a number", ":***@"]),
        (["status", "--app", "tasks:nope"], 1, ["no attribute 'nope'", "tasks:app"]),
        (["status", "--app", "tasks"], 2, ["module:attribute"]),
        (["worker", "--log-level", "verbose", "tasks:app"], 2, ["'--log-level'", "'verbose'"]),
        (["worker"], 2, ["Missing argument 'APP'"]),
        (["stauts"], 2, ["No such command 'stauts'"]),
        (["jobs", "--state", "bogus"], 2, ["'--state'", "'bogus'"]),
        (["purge", "--older-than", "1", "--yes"], 2, ["'--older-than'", "no unit", "7d"]),
        (["jobs", "--created-after", "7"], 2, ["'--created-after'", "add a unit"]),
        (["migrate", "--from", "sqlite:///missing.db", "--to", "sqlite:///t.db"], 1, ["no store"]),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_mistake_is_one_line(
    project: Path, args: list[str], status: int, fragments: list[str]
) -> None:
    assert_one_error(conveyor(*args, cwd=project), status, *fragments)
    assert not (project / "t.db").exists()  # migrate never reached its target


def test_backup_into_a_missing_directory(project: Path, store: str) -> None:
    proc = conveyor("backup", "--url", store, "/nonexistent/dir/b.db", cwd=project)
    assert_one_error(proc, 1, "no directory /nonexistent/dir", "create it first")


def test_redis_unreachable_is_one_line_for_status_and_worker(project: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    assert_one_error(conveyor("status", "--url", url, cwd=project), 1, "unavailable", "--url")
    worker = conveyor("worker", "tasks:app", "--url", url, cwd=project)
    line = assert_one_error(worker, 1, "unavailable")
    assert "cannot join thread" not in worker.stderr, line  # the cause, not the cleanup


def test_wrong_redis_password_says_authentication_failed(
    project: Path, restartable_redis: RedisServer
) -> None:
    redis.Redis.from_url(restartable_redis.url).config_set("requirepass", "s3cret")
    port = restartable_redis.port
    wrong = f"redis://:wrong@127.0.0.1:{port}/0"
    line = assert_one_error(conveyor("status", "--url", wrong, cwd=project), 1)
    assert "authentication failed" in line and "wrong" not in line.split("(")[0]
    missing = conveyor("worker", "tasks:app", "--url", f"redis://127.0.0.1:{port}/0", cwd=project)
    assert_one_error(missing, 1, "authentication failed")
    right = conveyor(
        "status", "--json", "--url", f"redis://:s3cret@127.0.0.1:{port}/0", cwd=project
    )
    assert right.returncode == 0, right.stderr


@pytest.mark.parametrize(
    ("args", "env", "status", "cause"),
    [
        (["--debug", "status", "--url", "sqlite:///missing.db"], {}, 1, "StoreNotFound"),
        (["status", "--url", "sqlite:///missing.db"], {"CONVEYOR_DEBUG": "1"}, 1, "StoreNotFound"),
        (["--debug", "worker", "nosuchmodule:app"], {}, 1, "ModuleNotFoundError"),
        (["--debug", "worker", "--log-level", "verbose", "tasks:app"], {}, 2, "BadParameter"),
    ],
    ids=["--debug", "CONVEYOR_DEBUG", "module", "usage"],
)
def test_debug_adds_the_traceback(
    project: Path, args: list[str], env: dict[str, str], status: int, cause: str
) -> None:
    proc = conveyor(*args, cwd=project, env=clean_env(**env))
    assert proc.returncode == status
    assert proc.stderr.startswith("Traceback (most recent call last):"), proc.stderr
    assert cause in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("Error: ")
    assert not (project / "missing.db").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["jobs"],
        ["job", "06H35RPMA1N6MG7F7EC5CVWKHC"],
        ["queues"],
        ["check"],
        ["export"],
        ["backup", "copy.db"],
        ["dashboard", "--port", "1"],
    ],
    ids=lambda c: c[0],
)
def test_read_only_commands_never_create_a_store(project: Path, command: list[str]) -> None:
    missing = project / "nodir" / "sub" / "x.db"
    proc = conveyor(*command, "--url", "sqlite:///nodir/sub/x.db", cwd=project)
    assert_one_error(proc, 1, f"no store at {missing}", "--url or $CONVEYOR_URL")
    assert not (project / "nodir").exists()
    assert proc.stdout == ""


def test_a_bad_url_from_the_environment_is_one_line_and_says_so(project: Path) -> None:
    env = clean_env(CONVEYOR_URL="redis://:pw@host:x/0")
    for command in (["status"], ["worker", "sidefx:app"]):
        line = assert_one_error(conveyor(*command, cwd=project, env=env), 1, "not a number")
        assert "pw" not in line  # the password is never shown
    line = assert_one_error(conveyor("jobs", cwd=project, env=env), 1)
    assert line.endswith("(from $CONVEYOR_URL)")


def test_an_empty_file_is_not_a_store_and_stays_empty(project: Path) -> None:
    empty = project / "empty.db"
    empty.touch()
    assert_one_error(conveyor("status", "--url", "sqlite:///empty.db", cwd=project), 1, "empty")
    assert empty.stat().st_size == 0


def test_resolving_app_calls_nothing(project: Path) -> None:
    proc = conveyor("worker", "sidefx:wipe", "--burst", cwd=project)
    assert_one_error(proc, 1, "sidefx:wipe is a function, not a conveyor.App")
    assert not (project / "WIPED").exists()
    proc = conveyor("status", "--app", "tasks:hello", cwd=project)
    assert_one_error(proc, 1, "tasks:hello is a Task, not a conveyor.App")


def test_error_lines_show_control_characters_escaped(project: Path, store: str) -> None:
    # An id typed (or pasted) with an escape sequence must not reach the terminal raw.
    proc = conveyor("job", "X\x1b[2J\x9b\u202e", "--url", store, cwd=project)
    line = assert_one_error(proc, 1, "no job X\\x1b[2J\\x9b\\u202e")
    assert "\x1b" not in line and "\x9b" not in line and "\u202e" not in line


def test_unknown_ids_are_named(project: Path, store: str) -> None:
    [job] = json.loads(conveyor("jobs", "--json", "--url", store, cwd=project).stdout)["jobs"]
    assert_one_error(conveyor("retry", "NOPE", "-y", "--url", store, cwd=project), 1, "no job NOPE")
    assert_one_error(conveyor("job", "NOPE", "--url", store, cwd=project), 1, "no job NOPE")
    partly = conveyor("cancel", job["id"], "NOPE", "--json", "--url", store, cwd=project)
    assert partly.returncode == 1, partly.stderr
    assert json.loads(partly.stdout) == {
        "action": "cancel",
        "matched": 2,
        "changed": 1,
        "not_found": ["NOPE"],
    }
    text = conveyor("delete", job["id"], "NOPE", "NOPE2", "--url", store, cwd=project)
    assert (
        text.returncode == 1 and "1 of 3" in text.stdout and "not found: NOPE, NOPE2" in text.stdout
    )


def test_pausing_an_unknown_queue_needs_force(project: Path, store: str) -> None:
    proc = conveyor("queues", "--url", store, "pause", "emial", cwd=project)
    assert_one_error(proc, 1, "'emial'", "known queues: default", "--force")

    def listed() -> dict[str, bool]:
        out = conveyor("queues", "--json", "--url", store, cwd=project).stdout
        return {q["queue"]: q["paused"] for q in json.loads(out)}

    assert "emial" not in listed()  # no phantom queue was stored
    # --app after the subcommand, where users type it, counts the same.
    declared = conveyor(
        "queues", "--url", store, "pause", "reports", "--app", "tasks:app", cwd=project
    )
    assert declared.returncode == 0, declared.stderr  # a task declares it: no --force needed
    forced = conveyor("queues", "--url", store, "pause", "later", "--force", cwd=project)
    assert forced.returncode == 0, forced.stderr
    assert listed() == {"default": False, "later": True, "reports": True}
    typo = conveyor("queues", "--url", "sqlite:///typo.db", "pause", "default", cwd=project)
    assert_one_error(typo, 1, "no store at")
    assert not (project / "typo.db").exists()


def test_purge_accepts_a_duration_with_its_unit(project: Path, store: str) -> None:
    proc = conveyor("purge", "--older-than", "12h", "--yes", "--json", "--url", store, cwd=project)
    assert proc.returncode == 0 and json.loads(proc.stdout)["changed"] == 0


def test_python_dash_m_conveyor_and_shell_completion(project: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conveyor", "--help"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: conveyor ")
    bare = conveyor(cwd=project)  # no command: click's help, not an "Error:" line
    assert bare.stderr.startswith("Usage: conveyor ") and "Error" not in bare.stderr
    script = conveyor("--help", cwd=project, env=clean_env(_CONVEYOR_COMPLETE="bash_source"))
    assert script.returncode == 0
    assert "_conveyor_completion()" in script.stdout and "complete -o nosort -F" in script.stdout


def test_dashboard_on_a_busy_port_is_one_line(project: Path, store: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = conveyor("dashboard", "--url", store, "--port", str(port), cwd=project)
    assert_one_error(proc, 1, f"cannot listen on 127.0.0.1:{port}", "--port")
    assert proc.stdout == ""
