"""Arm registry. Each system lives in its own module, imported only when one of its
variants runs (importing Celery, Dramatiq and RQ into one process would let one library's
global state touch another's numbers).
"""

from __future__ import annotations

import importlib
import os
import sys

from bench.arms.base import Arm, Variant

#: every variant the suite knows, without importing any peer library
_CATALOGUE: dict[str, tuple[str, ...]] = {
    "conveyor_arm": (
        "conveyor-sqlite-default",
        "conveyor-sqlite-default-strict",
        "conveyor-sqlite-durable",
        "conveyor-redis-default",
        "conveyor-redis-default-strict",
        "conveyor-sqlite",
        "conveyor-sqlite-c8",
        "conveyor-sqlite-process",
        "conveyor-redis",
        "conveyor-redis-c8",
        "conveyor-sqlite-prefetch",
        "conveyor-sqlite-c8-prefetch",
        "conveyor-redis-prefetch",
        "conveyor-redis-c8-prefetch",
        "conveyor-postgres-thread",
        "conveyor-postgres-async",
    ),
    "floor_arm": ("floor-sqlite", "floor-redis"),
    "procrastinate_arm": ("procrastinate",),
    "oban_arm": ("oban-py",),
    "pgqueuer_arm": ("pgqueuer",),
    "huey_arm": (
        "huey-sqlite-thread1",
        "huey-sqlite-process2",
        "huey-sqlite-default",
        "huey-redis-thread1",
    ),
    "dramatiq_arm": ("dramatiq-p1t1", "dramatiq-p2t8"),
    "celery_arm": ("celery-solo", "celery-prefork2", "celery-threads8", "celery-prefork2-default"),
    "rq_arm": ("rq-simple", "rq-fork"),
    "qler_arm": ("qler", "qler-default"),
    # The async Redis peers (issue 26): the ones users leaving arq pick.
    "saq_arm": ("saq",),
    "streaq_arm": ("streaq",),
    "taskiq_arm": ("taskiq-redis",),
    # arq cannot share the bench venv (redis-py < 6): its own, see python_for
    "arq_arm": ("arq",),
}

ALL = [name for names in _CATALOGUE.values() for name in names]
QUICK = ["conveyor-sqlite", "huey-sqlite-thread1"]
#: the default of ``python -m bench run``: every system in its best configuration (both
#: storages for conveyor and Huey; Celery's two best pools; conveyor with and without
#: prefetch, since its default claims only for free slots). The single-thread and
#: defaults-configuration variants run with ``--arms all`` or by name.
FULL = [
    "floor-sqlite",
    "floor-redis",
    "conveyor-sqlite-default",
    "conveyor-redis-default",
    "conveyor-sqlite-durable",
    "conveyor-sqlite",
    "conveyor-sqlite-prefetch",
    "conveyor-sqlite-c8",
    "conveyor-sqlite-process",
    "conveyor-redis",
    "conveyor-redis-prefetch",
    "conveyor-redis-c8",
    "huey-sqlite-thread1",
    "huey-redis-thread1",
    "dramatiq-p2t8",
    "celery-prefork2",
    "celery-threads8",
    "rq-simple",
    "qler",
    "saq",
    "streaq",
    "taskiq-redis",
    "arq",
    "conveyor-postgres-thread",
    "conveyor-postgres-async",
    "procrastinate",
    "oban-py",
    "pgqueuer",
]


#: Suffix of a PostgreSQL arm run on the suite's second cluster, the one with fsync,
#: synchronous_commit and full_page_writes off (a labelled speed-over-durability variant;
#: the plain name runs on the durable cluster, PostgreSQL's own defaults).
FSYNC_OFF = "+fsync-off"


def base_name(name: str) -> str:
    """The catalogue name of an arm, without the cluster suffix.

    >>> base_name("pgqueuer+fsync-off"), base_name("pgqueuer")
    ('pgqueuer', 'pgqueuer')
    """
    return name.removesuffix(FSYNC_OFF)


def fsync_off(name: str) -> bool:
    """Does this arm run on the fsync-off PostgreSQL cluster?"""
    return name.endswith(FSYNC_OFF)


def family_of(name: str) -> str:
    base = base_name(name)
    for family, names in _CATALOGUE.items():
        if base in names:
            if base != name and not needs_postgres(base):
                raise KeyError(f"{FSYNC_OFF} applies to PostgreSQL arms only, not {base!r}")
            return family
    raise KeyError(f"unknown arm {name!r}; known: {', '.join(ALL)}")


#: families whose every variant runs on Redis (the others say so in the variant's name)
_REDIS_FAMILIES = (
    "celery_arm",
    "dramatiq_arm",
    "rq_arm",
    "saq_arm",
    "streaq_arm",
    "taskiq_arm",
    "arq_arm",
)

#: families whose libraries conflict with the bench venv's, each run from its own venv
#: at the repository's root (arq 0.28 wants redis-py < 6; taskiq-redis 1.2 wants 8)
_VENVS = {"arq_arm": ".venv-bench-arq"}


def python_for(name: str) -> str:
    """The interpreter that runs this arm's producer: its own venv's where it has one
    (and that venv exists: else the bench's, where the arm reports itself unavailable).

    >>> python_for("saq") == sys.executable
    True
    """
    venv = _VENVS.get(family_of(name))
    if venv is None:
        return sys.executable
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    python = os.path.join(root, venv, "bin", "python")
    return python if os.path.exists(python) else sys.executable


def needs_redis(name: str) -> bool:
    """Does this arm use the suite's redis-server (as its broker)? Decided from the
    catalogue, without importing the peer library. The completion marker never does."""
    return family_of(name) in _REDIS_FAMILIES or "redis" in name


#: families whose every variant runs on PostgreSQL
_POSTGRES_FAMILIES = ("procrastinate_arm", "oban_arm", "pgqueuer_arm")


def needs_postgres(name: str) -> bool:
    """Does this arm use the suite's PostgreSQL cluster (started only when one does)?"""
    return family_of(name) in _POSTGRES_FAMILIES or "postgres" in name


def load(name: str) -> tuple[type[Arm], Variant]:
    """Import the arm's module and return its class and variant (may raise ImportError)."""
    module = importlib.import_module(f"bench.arms.{family_of(name)}")
    variant = next(v for v in module.VARIANTS if v.name == base_name(name))
    return module.ARM, variant


def make(name: str) -> Arm:
    cls, variant = load(name)
    return cls(variant)
