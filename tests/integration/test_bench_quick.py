"""The benchmark suite cannot rot: ``python -m bench run --quick`` runs end to end.

Asserts that the CSVs exist, that every measured run verified its job count from the
completion records, and that the marker was measured and checked; never a timing. The
arms are SQLite ones: the run must start no redis-server (the marker needs none).
W6 runs the way the lead adds it to a finished run: ``--append`` into the same directory.

Every scenario's path runs, at the smallest sizes that still take it (one W3 rate, one
W4 concurrency per job kind, the marker measured on 20,000 records), with two arms:
conveyor's and the SQLite floor (E1/E2 only: the floor columns, and the skipping of
scenarios an arm cannot do). Peer arms are not run here: each costs a worker and a
producer process per scenario, and the full run shows a broken one as discarded rows.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench import jobs
from bench.marker import MarkerFile, measure_cost

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_quick_suite_runs_and_every_run_verifies(tmp_path: Path) -> None:
    for module in ("psutil", "matplotlib", "rich"):
        try:
            __import__(module)
        except ImportError:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{module} missing: `make test` installs the [bench] extra")
            pytest.skip(f"{module} not installed (pip install -e '.[bench]')")
    out = tmp_path / "quick"
    # Charts are drawn once, by the second run (matplotlib's import and drawing cost
    # seconds; the second report has every scenario to draw).
    first = _bench(
        "--suite", "E1,E2,W1,W2,W3,W4,W5", "--arms", ARMS, "--out", str(out),
        "--scale", SMALL, "--no-charts",
    )  # fmt: skip
    assert not (out / "charts").exists()
    assert "| 200 | conveyor-sqlite |" in (out / "report.md").read_text()
    # The main run's report, before W6 is appended: no W6 section yet.
    assert "## W6" not in (out / "report.md").read_text()
    assert not (out / "W6.csv").exists()
    # Appended for conveyor alone: the floor, measured only by the first run, must get
    # its reason for W6 from the merge.
    second = _bench(
        "--suite", "W6", "--arms", "conveyor-sqlite", "--append", str(out),
        "--scale", "W6_rate=400,w6_s=0.5",
    )  # fmt: skip
    meta = json.loads((out / "meta.json").read_text())
    available = [a for a, c in meta["checks"].items() if c["available"]]
    assert available, meta["checks"]
    # --append merged W6 into the run: suites, one "appended" entry, the peer's reason.
    assert meta["suites"] == ["E1", "E2", "W1", "W2", "W3", "W4", "W5", "W6"], meta["suites"]
    assert [a["suites"] for a in meta["appended"]] == [["W6"]], meta["appended"]
    assert "W6" in meta["checks"]["floor-sqlite"]["unsupported"], meta["checks"]
    assert meta["scale"]["W1"] == 300, "an appended scenario runs at the run's own scale"
    assert meta["appended"][0]["overrides"] == {"W6_rate": 400, "w6_s": 0.5}, meta["appended"]
    w6 = list(csv.DictReader((out / "W6.csv").open()))
    assert {r["param"] for r in w6} == {
        "drain 1 worker",
        "drain 2 workers",
        "4 producers + 2 workers",
    }
    assert {r["arm"] for r in w6} == {"conveyor-sqlite"}, w6
    # W7 (many queues) appended too, on the default-flag arm it runs on: 60 jobs round
    # robin over 50 queues, each job once (the loop below checks its rows).
    third = _bench(
        "--suite", "W7", "--arms", "conveyor-sqlite-default", "--append", str(out),
        "--scale", "W7_queues=1/50,W7_n=60",
    )  # fmt: skip
    w7 = list(csv.DictReader((out / "W7.csv").open()))
    assert sorted((r["arm"], r["param"]) for r in w7) == [
        ("conveyor-sqlite-default", "1 queues"),
        ("conveyor-sqlite-default", "50 queues"),
    ], w7
    assert (
        "W7" in json.loads((out / "meta.json").read_text())["checks"]["floor-sqlite"]["unsupported"]
    )
    assert "results:" in third
    for scen in ("E1", "E2", "W1", "W2", "W3", "W4", "W5", "W6", "W7"):
        path = out / f"{scen}.csv"
        assert path.exists(), f"{scen}.csv missing"
        rows = list(csv.DictReader(path.open()))
        assert rows, f"{scen}.csv is empty"
        for row in rows:
            assert row["valid"] == "True", row
            if row.get("done"):
                # the run's own verification, from the marker records: every job once
                assert row["done"] == row["distinct"] == row["n"], row
                assert row["lost"] == row["duplicates"] == row["torn"] == "0", row
    # W5 in-process: the conveyor arm spawned one process that enqueued and ran a job
    w5 = {r["arm"]: r for r in csv.DictReader((out / "W5.csv").open())}
    assert float(w5["conveyor-sqlite"]["inprocess_first_job_ms"]) > 0, w5
    assert float(w5["conveyor-sqlite"]["python_start_ms"]) > 0, w5
    # The marker: measured alone (records read back intact), named in the report, and
    # checked against the fastest W1 arm; no Redis for SQLite arms.
    marker = meta["marker"]
    assert marker["kind"] == "file-append" and marker["intact"] is True, marker
    assert marker["cost_us_1proc"] > 0 and marker["cost_us_2proc"] > 0, marker
    assert marker["verdict"].startswith(("Marker check passed", "FAIRNESS")), marker
    assert any(marker["verdict"] in line for line in meta["checklist"]), meta["checklist"]
    assert meta["environment"]["redis_server"].startswith("not started"), meta["environment"]
    report = (out / "report.md").read_text()
    assert "completion marker: one os.write of a 64-byte record" in report
    assert f"{marker['cost_us_1proc']:.2f} µs a job from one process" in report
    assert "## W6 two `conveyor worker` processes on one SQLite file" in report
    assert "- appended later: W6 (conveyor-sqlite), run " in report
    # E1/E2 print conveyor's figure beside the floor's at the same N, with the ratio.
    assert "| floor (same N) | x floor |" in report
    e1_row = next(ln for ln in report.splitlines() if ln.startswith("| 200 | conveyor-sqlite |"))
    assert "(floor-sqlite) |" in e1_row and e1_row.endswith("x |"), e1_row
    assert "two workers drain at" in report, report
    assert "results:" in first and "results:" in second
    assert {p.name for p in (out / "charts").iterdir()} == {"w1.png", "w3_latency.png", "w4.png"}


def test_mixed_scenario_w8_runs_and_verifies(tmp_path: Path) -> None:
    # W8 (issue 26) at tiny sizes: 30 short noops in 0.3 s, alone and behind 2 jobs
    # sleeping 0.6 s, on one default-flag SQLite worker; every job verified once from
    # the records, the waits taken from them, and the long jobs ran through the stream.
    pytest.importorskip("rich")
    out = tmp_path / "w8"
    _bench(
        "--suite", "W8", "--arms", "conveyor-sqlite-default",
        "--out", str(out), "--no-charts",
        "--scale", "W8_rate=100,W8_s=0.3,W8_long=2,W8_long_s=0.6,marker_n=20000",
    )  # fmt: skip
    rows = {r["param"]: r for r in csv.DictReader((out / "W8.csv").open())}
    assert set(rows) == {"short only", "with 2 long"}, rows
    for param, row in rows.items():
        assert row["valid"] == "True" and row["arm"] == "conveyor-sqlite-default", row
        assert row["done"] == row["distinct"] == str(30 + 2 * (param != "short only")), row
        assert float(row["wait_p50_ms"]) <= float(row["wait_p99_ms"]), row
    assert float(rows["with 2 long"]["overlap"]) > 0.5, rows["with 2 long"]
    assert "## W8 short noop jobs" in (out / "report.md").read_text()


ARMS = "conveyor-sqlite,floor-sqlite"
#: The quick scale made smaller still (see the module docstring).
SMALL = "W1=300,W2=10,W3=0.9,w3_s=0.5,W4_n=8,W4_c=2,idle_s=0.2,marker_n=20000"


def _bench(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "run", "--quick", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _write_marks(mp: pytest.MonkeyPatch, path: Path, indices: list[int]) -> None:
    mp.setenv(jobs.PATH_ENV, str(path))
    jobs.close()  # this test process may hold another test's marker file
    for i in indices:
        jobs.run_job(i, 0.0, "noop")


@pytest.mark.timeout(30)
def test_marker_verification_counts_losses_duplicates_and_torn_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = MarkerFile(str(tmp_path / "marks"))
    _write_marks(monkeypatch, tmp_path / "marks", [0, 1, 2, 3])
    assert marks.count() == 4
    assert marks.verify(4)["valid"] is True
    assert sorted(i for i, *_ in marks.timings()) == [0, 1, 2, 3]
    # job 3 lost, job 1 ran twice: the record count alone (4) would hide both
    marks.reset()
    _write_marks(monkeypatch, tmp_path / "marks", [0, 1, 1, 2])
    v = marks.verify(4)
    assert (v["done"], v["distinct"], v["duplicates"], v["lost"], v["valid"]) == (
        4,
        3,
        1,
        1,
        False,
    )
    # a torn (partial) record at the end is reported, never counted as a job
    marks.reset()
    _write_marks(monkeypatch, tmp_path / "marks", [0, 1])
    with open(marks.path, "ab") as f:
        f.write(b"BNCH\x02")
    v = marks.verify(2)
    assert (v["done"], v["torn"], v["valid"]) == (2, 1, False)


@pytest.mark.timeout(60)
def test_marker_records_from_two_processes_never_interleave() -> None:
    # Two fresh processes append 20,000 records each to one file at the same moment;
    # every record must read back whole (the O_APPEND + < PIPE_BUF atomicity the suite
    # relies on), and the cost per job is what the run header prints.
    m = measure_cost(20_000, processes=2)
    assert m["intact"] is True, m
    assert len(m["us_per_job_each"]) == 2 and m["us_per_job"] > 0, m


@pytest.mark.timeout(30)
def test_marker_is_reopened_in_a_forked_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = MarkerFile(str(tmp_path / "marks"))
    _write_marks(monkeypatch, tmp_path / "marks", [0])  # the parent opens its descriptor
    pid = os.fork()
    if pid == 0:  # the child: a prefork pool's worker process
        try:
            jobs.run_job(1, 0.0, "noop")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    recs, bad = marks.records()
    assert bad == 0
    assert {(i, p) for i, _, _, _, p in recs} == {(0, os.getpid()), (1, pid)}


def test_cold_footprint_counts_both_sqlite_paths() -> None:
    # bench.cold_footprint (HOTPATH.md's cold-start method) runs end to end: one round of
    # each SQLite path reaches its event; the counts are printed, never judged here.
    proc = subprocess.run(
        [sys.executable, "-m", "bench.cold_footprint", "--rounds", "1"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for path in ("first", "worker-sqlite"):
        assert f"  {path}\n" in proc.stdout
    assert proc.stdout.count(" modules ") == 2, proc.stdout
