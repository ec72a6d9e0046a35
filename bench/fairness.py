"""The fairness checklist as code: arm order, iteration counts, the identical-PRAGMA
check, and the printed list of what was enforced (design doc + seeds 000/003/004)."""

from __future__ import annotations

from typing import Any

from bench import jobs
from bench import marker as marker_mod


def arm_order(arms: list[str], iteration: int) -> list[str]:
    """Rotate the start position each iteration (deterministic; never ``hash()``, which
    Python randomises per process) so no arm always runs first or last."""
    if not arms:
        return []
    k = iteration % len(arms)
    return arms[k:] + arms[:k]


def pragma_parity(checks: dict[str, dict[str, Any]]) -> tuple[bool, list[str]]:
    """Do all SQLite arms (except ``*-default`` ones, kept at Huey's and qler's defaults on
    purpose) report the same PRAGMA values from their own connections?"""
    compared = {
        arm: c["pragmas"]
        for arm, c in checks.items()
        if c.get("pragmas") and not arm.endswith("-default")
    }
    lines = [f"{arm}: {p}" for arm, p in compared.items()]
    keys = ("journal_mode", "synchronous", "cache_size", "temp_store")
    values = {tuple(str(p.get(k)) for k in keys) for p in compared.values()}
    return len(values) <= 1, lines


def checklist(
    scale: dict[str, Any],
    checks: dict[str, dict[str, Any]],
    marker: dict[str, Any] | None,
    postgres: dict[str, str] | None = None,
    postgres_fast: dict[str, str] | None = None,
) -> list[str]:
    """The checklist lines printed with every result (``marker``: the run's measured
    marker entry, :func:`bench.marker.measure`)."""
    same, pragma_lines = pragma_parity(checks)
    defaults = [a for a in checks if a.endswith("-default")]
    cost = (
        f"measured alone in this run: {marker['cost_us_1proc']:.2f} µs a job from one "
        f"process, {marker['cost_us_2proc']:.2f} µs from 2 processes writing at once"
        if marker
        else "not measured"
    )
    redis = any(c.get("storage") == "redis" for c in checks.values())
    return [
        "Same machine, same run, same Python"
        + (
            ", one private redis-server (no persistence) shared by every Redis arm; "
            if redis
            else "; no Redis arm, so no redis-server: "
        )
        + "the completion marker does not use Redis.",
        f"Same job body for every arm (bench/jobs.py): work, then ONE os.write of a "
        f"{jobs.RECORD.size}-byte record (index, t0, start, end, pid) to the "
        "measurement's marker file, opened O_WRONLY|O_APPEND once per process (reopened "
        "after fork). Completion = the harness stats the file's size every 2 ms from its "
        "own process, for every arm; nothing polls the measured processes or their Redis.",
        f"The marker is not what is measured: its cost ({cost}) must stay below "
        f"{marker_mod.FAIR_SHARE:.0%} of the fastest arm's W1 time per job, checked "
        "below (a FAIRNESS line when not).",
        "Every run verified from the records: records == distinct indices == N, none "
        "missing, none out of range, none torn (duplicates and losses counted); an "
        "unverified run is discarded (kept in the CSV with valid=False).",
        f"SQLite PRAGMAs read back from each SQLite arm's own connection; identical: "
        f"{'yes' if same else 'NO'}.",
        *[f"  {line}" for line in pragma_lines],
        *(
            [
                "One private PostgreSQL cluster (initdb + pg_ctl, loopback, started by the "
                "suite) shared by every PostgreSQL arm, a fresh database per measurement "
                "(schema by each system's own install step, untimed); settings read back: "
                + ", ".join(f"{k}={v}" for k, v in postgres.items())
            ]
            if postgres
            else []
        ),
        *(
            [
                "A second cluster, the same way, for the arms named `+fsync-off` only (a "
                "labelled speed-over-durability variant, never a target's reading); read "
                "back: " + ", ".join(f"{k}={v}" for k, v in postgres_fast.items())
            ]
            if postgres_fast
            else []
        ),
        "Fresh producer process and fresh worker process per measurement; fresh Redis "
        "(FLUSHALL), a new SQLite file and a new, empty marker file per measurement (the "
        "SQLite file created by `qler init` for qler, its documented first step, untimed).",
        f"Warm-up runs per scenario and arm: {scale['warmup']} (discarded); measured "
        f"iterations: {scale['iterations']}; tables show the median with min and max.",
        "Arm order rotates each iteration (start position shifts by one), not hash().",
        "GC: producer timed windows run after gc.collect() with gc disabled, for every arm; "
        "workers run with each system's default GC.",
        "Connections and schema set-up are opened before the timed window for every arm "
        "(producer) and inside it for every arm (worker start, W5).",
        "Each arm runs in its documented best configuration, printed below"
        + (
            f", plus its defaults where they differ ({', '.join(defaults)})."
            if defaults
            else " (the defaults-configuration arms were not in this run)."
        ),
        "Each arm's settings, and what a job it has accepted survives (durability):",
        *[
            f"  {arm}: {c.get('config', '')}; durability: {c.get('durability') or '-'}"
            for arm, c in checks.items()
            if c.get("available")
        ],
        "Bytecode: every system runs from compiled .pyc files (pip compiles the peers at "
        "install; the harness compiles conveyor's and the suite's sources before the run), "
        "so no arm pays compilation in W5 or anywhere else.",
        "CPU time and peak RSS cover the whole worker process tree (psutil, 50 ms samples; "
        "reaped children counted through children_user/system).",
    ]
