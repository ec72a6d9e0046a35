"""The bench's PostgreSQL clusters: a durable one (PostgreSQL's own defaults: ``fsync``,
``synchronous_commit`` and ``full_page_writes`` on, as a real deployment runs) for the
PostgreSQL arms, and, only when an arm is named ``<arm>+fsync-off``
(:data:`bench.arms.FSYNC_OFF`), a second one with all three off, its labelled
speed-over-durability variant. Both are started the same way (initdb + pg_ctl on
loopback, :mod:`bench.postgres_cluster`) and their settings are read back and printed.

Example::

    python -m bench run --suite W1 --arms pgqueuer,pgqueuer+fsync-off
"""

from __future__ import annotations

import os

from rich.console import Console

from bench import arms as arm_registry
from bench import scenarios as sc
from bench.postgres_cluster import DURABLE_SETTINGS, FAST_SETTINGS, PostgresCluster

FSYNC_OFF_DURABILITY = (
    "none beyond the server process: fsync, synchronous_commit and full_page_writes off "
    "(a crash of the machine can lose or corrupt committed jobs); shown for comparison only"
)


def start(ctx: sc.Ctx, arms: list[str], console: Console) -> tuple[dict[str, str], dict[str, str]]:
    """Start the PostgreSQL clusters the arms need, and return their settings as read
    back: the durable one (PostgreSQL's defaults: fsync, synchronous_commit on) for the
    plain PostgreSQL arms, the fsync-off one for arms named ``<arm>+fsync-off``. Every
    arm on one cluster sees the same server; a fresh database per measurement."""
    wanted = [a for a in arms if arm_registry.needs_postgres(a)]
    settings: list[dict[str, str]] = [{}, {}]
    for i, (fast, conf) in enumerate(((False, DURABLE_SETTINGS), (True, FAST_SETTINGS))):
        if not any(arm_registry.fsync_off(a) == fast for a in wanted):
            continue
        try:
            cluster = PostgresCluster().init(conf).start()
        except (FileNotFoundError, RuntimeError) as exc:
            # No server binaries here: those arms report themselves not available.
            console.print(f"[yellow]no PostgreSQL cluster: {exc}[/yellow]")
            continue
        if fast:
            ctx.postgres_fast = cluster
        else:
            ctx.postgres = cluster
        os.environ["BENCH_POSTGRES_URL"] = cluster.url_for(sc.PG_DATABASE)
        settings[i] = cluster.settings()
        label = "fsync-off cluster" if fast else "durable cluster"
        console.print(
            f"postgres {label} (read back): "
            + ", ".join(f"{k}={v}" for k, v in settings[i].items())
        )
    return settings[0], settings[1]
