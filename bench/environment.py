"""The machine and software a run used, printed with every result."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sqlite3
from typing import Any

PACKAGES = (
    "conveyor",
    "celery",
    "kombu",
    "redis",
    "dramatiq",
    "rq",
    "huey",
    "qler",
    "sqler",
    "aiosqlite",
    "psutil",
    "psycopg",
    "procrastinate",
    "oban",
    # the issue-26 peers (their versions were missing from every report's header)
    "pgqueuer",
    "typer",
    "asyncpg",
    "saq",
    "streaq",
    "taskiq",
    "taskiq-redis",
)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def describe(redis_version: str) -> dict[str, Any]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory": mem,
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "redis_server": redis_version,
        "packages": versions,
        "loadavg_start": os.getloadavg(),
    }
