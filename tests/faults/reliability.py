"""The long fault run's report: one :class:`Row` per scenario and RELIABILITY.md
(:func:`write`), for ``python -m tests.faults`` (``tests/faults/__main__.py``).

Example::

    row = Row("storm", "sqlite", 10, 0, "0 (0 unexplained)", 0, 1.0, held(True, ""))
    row.markdown()   # '| storm | sqlite | 10 | 0 | 0 (0 unexplained) | 0 | 1.0 | held |'
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


def write(out: Path, size: str, job_seconds: float, rows: list[Row], total: float) -> None:
    """RELIABILITY.md: the run's rows under what was run and on what."""
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
        "is described in the docs section linked above.",
        "",
        "**lost**: jobs not final at the end (or final without having run). **duplicated**: "
        "extra runs counted from a side-effect file each run appends to (`O_APPEND`); "
        "*unexplained* ones have no rescued (`lost`) or released attempt in the job's "
        "history. **dead**: jobs that ended dead (for the poison rows: innocent jobs only).",
        "",
        "| scenario | backend | N | lost | duplicated | dead | time (s) | verdict |",
        "|---|---|---|---|---|---|---|---|",
        *(r.markdown() for r in rows),
        "",
    ]
    out.write_text("\n".join(lines))
