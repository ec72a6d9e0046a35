"""The fault suite's report: one :class:`Row` per scenario run, and RELIABILITY.md
written from them (:func:`write`; with ``--only``, :func:`merge` replaces the rows of
the scenarios run again and keeps the rest). Split from ``__main__.py``, which runs them.

Example::

    write(Path("RELIABILITY.md"), "long", [Row.of(tally, "held")], total=190.0)
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import platform
import subprocess
from pathlib import Path

from bench.postgres_cluster import find_binary

from tests.faults.harness import Tally

#: the header of the table, as written
HEADER = "| scenario | backend | N | lost | duplicated | dead | time (s) | verdict |"


@dataclasses.dataclass
class Row:
    scenario: str
    backend: str
    n: int
    lost: int | str
    duplicated: str
    dead: int | str
    seconds: float
    verdict: str

    @classmethod
    def of(cls, tally: Tally, verdict: str, scenario: str | None = None) -> Row:
        dup = f"{tally.duplicated} ({tally.unexplained_duplicates} unexplained)"
        return cls(
            scenario or tally.scenario,
            tally.backend,
            tally.n,
            tally.lost,
            dup,
            tally.dead,
            tally.seconds,
            verdict,
        )

    def markdown(self) -> str:
        cells = [
            self.scenario, self.backend, str(self.n), str(self.lost), self.duplicated,
            str(self.dead), f"{self.seconds:.1f}", self.verdict,
        ]  # fmt: skip
        return "| " + " | ".join(c.replace("|", "/") for c in cells) + " |"


def held(ok: bool, why: str) -> str:
    return "held" if ok else f"**fails**: {why}"


def write(out: Path, size: str, rows: list[Row], total: float, job_seconds: float) -> None:
    redis_version = subprocess.run(
        ["redis-server", "--version"], capture_output=True, text=True
    ).stdout.split()
    postgres = find_binary("postgres")
    postgres_version = (
        subprocess.run([postgres, "--version"], capture_output=True, text=True).stdout.strip()
        if postgres
        else "PostgreSQL not installed"
    )
    machine = f"{os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"
    command = (
        "python -m tests.faults --long"
        if size == "long"
        else f"python -m tests.faults --size {size}"
    )
    lines = [
        "# Reliability: the fault suite's figures",
        "",
        f"Written by `{command}` on {datetime.date.today().isoformat()} ({machine}; "
        f"{' '.join(redis_version[:3])}; {postgres_version}); the whole run took {total / 60:.1f} min. Rerun it "
        "with that command (`.venv/bin/python -m tests.faults --long` for the issue's sizes: "
        "10,000 jobs, 3 workers, a SIGKILL every 0.5 s; 8 producers x 2,000). The same "
        "scenarios run small in `make test` (`tests/faults/`). How each is set up: "
        "[docs/guarantees.md](docs/guarantees.md#fault-tests).",
        "",
        f"Storm and restart jobs sleep {job_seconds * 1000:g} ms each (3 workers "
        "x 10 slots), so the kills land while jobs run. Each kill goes to a worker that has "
        "finished starting (one killed mid-import would test Python's start-up), so the "
        "rate can fall below one per 0.5 s: the verdict counts them. Every other scenario "
        "is described in the docs section linked above. The sequence storm (issue 24) runs "
        "`keys x jobs` of one sequence key each (random durations) and checks, per key, "
        "that runs start in enqueue order and never overlap; its N is jobs, *duplicated* "
        "the runs cut off by a kill and run again.",
        "",
        "**lost**: jobs not final at the end (or final without having run). **duplicated**: "
        "extra runs counted from a side-effect file each run appends to (`O_APPEND`); "
        "*unexplained* ones have no rescued (`lost`) or released attempt in the job's "
        "history. **dead**: jobs that ended dead (for the poison rows: innocent jobs only).",
        "",
        HEADER,
        "|---|---|---|---|---|---|---|---|",
        *(r.markdown() for r in rows),
        "",
    ]
    out.write_text("\n".join(lines))


def merge(out: Path, rows: list[Row], command: str) -> None:
    """Put ``rows`` in the table of an existing report: a row of the same scenario and
    backend is replaced, a new one appended; a note says which command wrote them."""
    if not out.exists():
        raise FileNotFoundError(f"{out}: nothing to merge into (run without --only first)")
    lines = out.read_text().splitlines()
    new = {(r.scenario, r.backend): r.markdown() for r in rows}
    kept: list[str] = []
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) > 2 and (cells[0], cells[1]) in new:
            continue
        kept.append(line)
    last = max(i for i, line in enumerate(kept) if line.startswith("|"))
    kept[last + 1 : last + 1] = list(new.values())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    stamp = f"{datetime.date.today().isoformat()}, load average {load} at the end"
    backends = ", ".join(sorted({r.backend for r in rows}))
    scenarios = ", ".join(sorted({r.scenario for r in rows}))
    kept += ["", f"Rows of {scenarios} ({backends}): `{command}` on {stamp}."]
    out.write_text("\n".join(kept) + "\n")
