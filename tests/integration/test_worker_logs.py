"""What a real `conveyor worker` prints on stderr: job events, start lines, shutdown
progress, JSON lines. Real processes on a real SQLite file (and a real redis-server with
a password for the URL line), real signals."""

from __future__ import annotations

import datetime as dt
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from tests.integration import log_tasks
from tests.integration.cli_run import conveyor as conveyor_cli
from tests.integration.conftest import ROOT, wait_for, worker_env
from tests.integration.test_worker_ops import free_port
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

TASKS = "tests.integration.log_tasks"


class Stderr:
    """The lines a process writes on stderr, collected by a thread as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        """The first line matching ``pattern`` (a regex), waiting for it to appear."""
        regex = re.compile(pattern)
        found: list[re.Match[str]] = []

        def seen() -> bool:
            found[:] = [m for m in map(regex.search, list(self.lines)) if m][:1]
            return bool(found)

        try:
            wait_for(seen, timeout, what=f"a line matching {pattern!r}")
        except AssertionError:
            raise AssertionError(f"no line matches {pattern!r} in:\n" + self.text()) from None
        return found[0]

    def finish(self, timeout: float = 15.0) -> list[str]:
        self.proc.wait(timeout)
        self._thread.join(timeout)
        return self.lines

    def text(self) -> str:
        return "\n".join(self.lines)


Spawn = Callable[..., Stderr]


@pytest.fixture
def app(sqlite_url: str) -> Iterator[conveyor.App]:
    log_tasks.app.url = sqlite_url
    log_tasks.app.close()
    yield log_tasks.app
    log_tasks.app.close()


@pytest.fixture
def spawn(sqlite_url: str) -> Iterator[Spawn]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str, url: str | None = None, spec: str = f"{TASKS}:app") -> Stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "conveyor.cli", "worker", spec, *args],
            cwd=ROOT,
            env=worker_env(url or sqlite_url),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        return Stderr(proc)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(10)


def _task(name: str) -> str:
    return f"{TASKS}.{name}"


def test_a_failing_task_logs_each_attempt_and_then_dead(app: conveyor.App, spawn: Spawn) -> None:
    job = log_tasks.flaky.enqueue()
    out = spawn("-c", "2")
    failed = out.wait(
        rf"INFO conveyor\.worker\.jobs: job {job.id} \({re.escape(_task('flaky'))}\) failed, "
        r"attempt 1/2: ValueError: boom 42; next run at (\S+) \(in ([\d.]+) s\)"
    )
    out.wait(
        rf"INFO conveyor\.worker\.jobs: job {job.id} \({re.escape(_task('flaky'))}\) dead after "
        r"attempt 2/2: ValueError: boom 42"
    )
    wait_for(lambda: job.refresh().state is JobState.DEAD, what="the job to be dead")
    # The next run time printed is the one the store scheduled: first finish + 0.5 s.
    first = job.attempts()[0]
    assert first.finished_at is not None
    next_run = dt.datetime.fromisoformat(failed.group(1)).timestamp()
    assert abs(next_run - (first.finished_at + 0.5)) < 0.05
    assert float(failed.group(2)) == pytest.approx(0.5, abs=0.05)
    out.proc.send_signal(signal.SIGTERM)
    assert out.proc.wait(15) == 0


def test_succeeded_is_logged_at_debug_only(app: conveyor.App, spawn: Spawn) -> None:
    first = log_tasks.noop.enqueue()
    quiet = spawn("--burst")
    quiet.finish()
    assert first.refresh().state is JobState.SUCCEEDED
    assert first.id not in quiet.text()  # no line names the job
    assert ") succeeded in" not in quiet.text()
    second = log_tasks.noop.enqueue()
    chatty = spawn("--burst", "--log-level", "debug")
    chatty.finish()
    assert re.search(
        rf"DEBUG conveyor\.worker\.jobs: job {second.id} \({re.escape(_task('noop'))}\) "
        r"succeeded in [\d.]+ s, attempt 1/\d+",
        chatty.text(),
    ), chatty.text()


def test_sigterm_prints_progress_and_releases_running_jobs(
    app: conveyor.App, spawn: Spawn, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    job = log_tasks.patient.enqueue(str(marker))
    out = spawn("--shutdown-timeout", "0.5")
    wait_for(marker.exists, what="the job to start")
    out.proc.send_signal(signal.SIGTERM)
    assert out.proc.wait(15) == 0
    text = "\n".join(out.finish())
    patterns = [
        r"INFO conveyor\.worker: received SIGTERM: stopping gracefully",
        r"INFO conveyor\.worker: stopping: waiting up to 0\.5 s for 1 running job\(s\)",
        rf"INFO conveyor\.worker\.jobs: job {job.id} \({re.escape(_task('patient'))}\) "
        r"released back to queue default \(running; attempt not counted\)",
        r"WARNING conveyor\.worker: released 1 running job\(s\) back to the queue",
        r"conveyor\.worker: worker \S+ stopped",
        r"conveyor\.console: log lines: emitted=\d+ written=\d+ dropped=0",
    ]
    positions = [re.search(p, text) for p in patterns]
    assert all(positions), text
    starts = [m.start() for m in positions if m]
    assert starts == sorted(starts), text  # in this order
    assert job.refresh().state is JobState.QUEUED


def test_cancel_honoured_is_logged(app: conveyor.App, spawn: Spawn, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    job = log_tasks.patient.enqueue(str(marker))
    out = spawn()
    wait_for(marker.exists, what="the job to start")
    job.cancel("no longer needed")
    out.wait(
        rf"INFO conveyor\.worker\.jobs: job {job.id} \({re.escape(_task('patient'))}\) "
        r"cancelled, attempt 1/\d+: cancelled while running"
    )
    assert job.refresh().state is JobState.CANCELLED
    out.proc.send_signal(signal.SIGTERM)
    assert out.proc.wait(15) == 0


def test_a_killed_workers_job_is_logged_as_rescued_by_the_next(
    app: conveyor.App, spawn: Spawn, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    job = log_tasks.patient.enqueue(str(marker))
    first = spawn()
    wait_for(marker.exists, what="the job to start")
    first_id = first.wait(r"worker (\S+) ready:").group(1)
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    second = spawn("--shutdown-timeout", "0.5")
    second.wait(
        rf"INFO conveyor\.worker\.jobs: job {job.id} rescued from lost worker "
        rf"{re.escape(first_id)}: queued again"
    )
    second.proc.send_signal(signal.SIGTERM)
    assert second.proc.wait(15) == 0


def test_start_lines_default_queues_and_queue_warnings(app: conveyor.App, spawn: Spawn) -> None:
    # No --queue: every declared queue plus default, and it says so.
    default = spawn("--burst")
    default.finish()
    text = default.text()
    assert re.search(
        r"ready: queues=default:1,mail:1 pool=thread concurrency=10 prefetch=auto "
        r"url=sqlite:///\S+jobs\.db$",
        text,
        re.MULTILINE,
    ), text
    assert "no --queue given: consuming every queue the app's tasks declare" in text, text
    assert f"{_task('send')} (mail)" in text and f"{_task('noop')} (default)" in text
    assert "WARNING" not in text, text
    # A typo: the declared queue is not consumed, the consumed one is not declared.
    typo = spawn("--burst", "-q", "emial:2", "-q", "default")
    typo.finish()
    text = typo.text()
    assert "ready: queues=emial:2,default:1 pool=" in text, text
    assert "no --queue given" not in text
    assert re.search(
        rf"WARNING conveyor\.worker: queue 'mail' is declared by task\(s\) "
        rf"{re.escape(_task('send'))} but this worker does not consume it",
        text,
    ), text
    assert re.search(
        r"WARNING conveyor\.worker: queue 'emial' is consumed but no task of the app "
        r"declares it \(a typo\? declared: default, mail\)",
        text,
    ), text


def test_a_default_worker_runs_jobs_of_every_declared_queue(
    app: conveyor.App, spawn: Spawn
) -> None:
    mail = log_tasks.send.enqueue("a@example.com")
    spawn("--burst").finish()
    assert mail.refresh().state is JobState.SUCCEEDED


@pytest.mark.redis
def test_redis_url_is_printed_without_its_password(tmp_path: Path, spawn: Spawn) -> None:
    server = RedisServer(tmp_path / "redis").start()
    try:
        import redis

        client = redis.Redis(port=server.port)
        client.config_set("requirepass", "s3cret-pw")
        client.close()
        url = f"redis://:s3cret-pw@127.0.0.1:{server.port}/0"
        out = spawn("--burst", url=url)
        out.finish()
        assert out.proc.returncode == 0, out.text()
        assert f" url=redis://:***@127.0.0.1:{server.port}/0\n" in out.text(), out.text()
        assert "s3cret-pw" not in out.text()
    finally:
        server.stop()


def test_json_format_is_one_object_per_line(app: conveyor.App, spawn: Spawn) -> None:
    job = log_tasks.flaky.enqueue()
    out = spawn("--log-format", "json", "-q", "default")
    out.wait(r'"event": "job.dead"')
    out.proc.send_signal(signal.SIGTERM)
    docs = [json.loads(line) for line in out.finish()]  # every line parses
    assert all({"ts", "level", "logger", "message"} <= d.keys() for d in docs)
    events = {d.get("event"): d for d in docs}
    failed = events["job.failed"]
    assert failed["job_id"] == job.id and failed["task"] == _task("flaky")
    assert (failed["attempt"], failed["max_attempts"]) == (1, 2)
    assert (failed["error_type"], failed["error"]) == ("ValueError", "boom 42")
    assert dt.datetime.fromisoformat(failed["run_at"]).timestamp() > time.time() - 60
    assert events["queue.not_consumed"]["queue"] == "mail"
    assert events["log.summary"]["emitted"] == events["log.summary"]["written"]
    assert dt.datetime.fromisoformat(docs[0]["ts"]).tzinfo is not None


def test_log_level_is_a_choice(spawn: Spawn) -> None:
    out = spawn("--log-level", "verbose")
    out.finish()
    assert out.proc.returncode == 2
    assert "Invalid value for '--log-level'" in out.text()


def test_jobs_waiting_in_a_queue_nobody_declares_are_named_at_start(
    app: conveyor.App, spawn: Spawn
) -> None:
    job = log_tasks.send.with_options(queue="urgent").enqueue("a@example.com")
    out = spawn("--burst")
    out.finish()
    assert re.search(
        r"WARNING conveyor\.worker: queue 'urgent' holds 1 waiting job\(s\) but this worker "
        r"does not consume it \(add --queue urgent\)",
        out.text(),
    ), out.text()
    assert job.refresh().state is JobState.QUEUED
    # Consuming it as told (the README's quick start does): no "a typo?" warning, since
    # the queue holds jobs; the declared queues are consumed too, so no warning at all.
    served = spawn("--burst", "-q", "urgent", "-q", "mail", "-q", "default")
    served.finish()
    assert "WARNING" not in served.text(), served.text()
    assert job.refresh().state is JobState.SUCCEEDED


def test_an_app_without_tasks_warns_with_the_fix_and_unknown_tasks_say_it_once(
    app: conveyor.App, spawn: Spawn
) -> None:
    job = log_tasks.noop.enqueue()  # a task the empty app does not register
    empty = "tests.integration.empty_app"
    out = spawn("--burst", spec=f"{empty}:app")
    out.finish()
    text = out.text()
    assert (
        f"WARNING conveyor.worker: tasks: none: {empty}:app registers no task, so every "
        "job this worker claims ends dead (unknown task): import the module that defines "
        f"them from {empty}, the module of {empty}:app (e.g. import tests.integration.tasks "
        "there), or name it: --include tests.integration.tasks"
    ) in text, text
    reason = f"unknown task {_task('noop')!r}: not registered in this worker"
    dead = [line for line in out.lines if f"job {job.id}" in line]
    assert len(dead) == 1 and dead[0].endswith(f"dead after attempt 1/5: Unrunnable: {reason}")
    assert text.count(reason) == 1, text  # not repeated as "(reason)"
    record = job.refresh()
    assert record.state is JobState.DEAD and record.reason == reason


@pytest.mark.parametrize("pool", ["thread", "process"])
def test_a_result_that_cannot_be_encoded_is_dead_at_once_not_retried(
    app: conveyor.App, spawn: Spawn, pool: str, sqlite_url: str
) -> None:
    job = log_tasks.tags.enqueue()
    out = spawn("--burst", "--pool", pool, "-c", "1")
    out.finish(30)
    assert out.proc.returncode == 0, out.text()
    record = job.refresh()
    assert record.state is JobState.DEAD and record.attempt == 1
    assert [a.outcome for a in job.attempts()] == ["dead"]
    error = json.loads(record.error or "{}")
    assert error["type"] == "EncodeError"
    assert error["message"].startswith("cannot encode result")
    assert "set" in error["message"], error
    because = "not retried: running it again would be refused the same way"
    assert record.reason == because
    assert re.search(
        rf"job {job.id} \({re.escape(_task('tags'))}\) dead after attempt 1/5: "
        rf"EncodeError: cannot encode result.*\({because}\)$",
        out.text(),
        re.MULTILINE,
    ), out.text()
    assert "failed, attempt" not in out.text()  # no retry was ever scheduled
    shown = conveyor_cli("job", job.id, "--url", sqlite_url, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert f"reason: {because}" in shown.stdout
    assert re.search(r"^1 .* dead +EncodeError: cannot encode result", shown.stdout, re.M), (
        shown.stdout
    )


def test_metrics_port_logs_its_url_and_names_follow_prometheus(
    app: conveyor.App, spawn: Spawn
) -> None:
    pytest.importorskip("prometheus_client")  # the metrics extra; in the dev extra too
    from prometheus_client.parser import text_string_to_metric_families

    done = [log_tasks.noop.enqueue(), log_tasks.noop.enqueue()]
    later = log_tasks.noop.enqueue_after(600)
    port = free_port()
    out = spawn("--metrics-port", str(port))
    url = out.wait(r"INFO conveyor\.worker: metrics: serving (\S+)$").group(1)
    assert url == f"http://127.0.0.1:{port}/metrics"
    wait_for(lambda: all(j.refresh().state is JobState.SUCCEEDED for j in done), what="runs")
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    types: dict[str, str] = {}

    def scrape() -> bool:  # the gauges are refreshed every 2 s
        body = urllib.request.urlopen(url, timeout=5).read().decode()
        types.clear()
        samples.clear()
        for family in text_string_to_metric_families(body):
            types[family.name] = family.type
            for sample in family.samples:
                samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
        depth = [samples.get(("conveyor_queue_depth", _labels(s))) for s in ("queued", "scheduled")]
        return depth == [0, 1]  # a refresh after the two ran

    wait_for(scrape, 10, what="the depth gauge to count only the scheduled job")
    assert later.refresh().state is JobState.SCHEDULED
    ours = {name: kind for name, kind in types.items() if name.startswith("conveyor_")}
    counters = {name for name, kind in ours.items() if kind == "counter"}
    assert "conveyor_log_dropped" in counters and "conveyor_jobs_succeeded" in counters
    for name, _ in samples:
        family = next(f for f in ours if name == f or name.startswith(f + "_"))
        if family in counters:  # a counter's samples are NAME_total (and NAME_created)
            assert name in (f"{family}_total", f"{family}_created"), name
        else:
            assert not name.endswith("_total"), f"{name} is a {ours[family]} named as a counter"
    assert ours["conveyor_queue_depth"] == "gauge" and ours["conveyor_log_backlog"] == "gauge"
    assert samples["conveyor_log_dropped_total", ()] == 0
    succeeded = ("conveyor_jobs_succeeded_total", (("queue", "default"), ("task", _task("noop"))))
    assert samples[succeeded] == 2
    depth_states = {
        dict(labels)["state"] for name, labels in samples if name == "conveyor_queue_depth"
    }
    assert depth_states == {"queued", "scheduled", "waiting"}  # waiting work, never finished
    assert ("conveyor_queue_running", (("queue", "default"),)) in samples
    out.proc.send_signal(signal.SIGTERM)
    assert out.proc.wait(15) == 0


def _labels(state: str) -> tuple[tuple[str, str], ...]:
    return (("queue", "default"), ("state", state))
