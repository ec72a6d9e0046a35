"""The stage of bench/hosts.py: worker "hosts" in network namespaces, a store server
they reach over their veth cables, and a CPU cap (a cgroup quota) on that server.

Each host is a namespace ``cvh-<pid>-<k>`` with one veth pair: ``10.R.S.4k+2`` inside,
``10.R.S.4k+1`` (its gateway) in the root namespace, where the server listens. Nothing
leaves the machine. The server runs in a cgroup ``conveyor-hosts-<pid>`` whose quota
(``cpu.max`` on cgroup v2, ``cpu.cfs_quota_us`` on v1) caps it at a fraction of one
core, with a large weight so that the other processes of a busy box cannot push it
below that fraction: the cap is what the server has, not only what it may have.

Everything made here is removed on exit (the ``stage`` context manager), and what a
killed run left behind (its pid gone) is removed by the next one. Needs root and ``ip``.

Example::

    with stage("redis", hosts=2) as st:
        st.cap.set(0.2)  # the server now has 0.2 of a core
        print(st.url_at(st.hosts[0]), st.server_cpu())
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench import harness
from bench.postgres_cluster import DURABLE_SETTINGS, PostgresCluster

PREFIX = "cvh"
CGROUP = "conveyor-hosts"


class StageError(RuntimeError):
    """The stage cannot be built here (not root, no ``ip``, no cgroup cpu controller)."""


def missing() -> str | None:
    """Why namespaces and a CPU cap cannot be made here, or None when they can."""
    if shutil.which("ip") is None:
        return "`ip` (iproute2) not found: cannot make network namespaces"
    if os.geteuid() != 0:
        return "network namespaces and cgroups need root"
    if CpuCap.root() is None:
        return "no writable cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us)"
    return None


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise StageError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@dataclass(frozen=True)
class Host:
    """One namespace: ``address`` inside it, ``gateway`` at the root end of its cable."""

    namespace: str
    veth: str
    address: str
    gateway: str

    def command(self, args: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *args]


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.R.S.0/24 that no address or route of the machine overlaps."""
    shown = " ".join(
        subprocess.run(["ip", "-4", "-o", *a], capture_output=True, text=True).stdout
        for a in (("route", "show", "table", "all"), ("addr",))
    )
    used = []
    for word in shown.split():
        with contextlib.suppress(ValueError):
            used.append(ipaddress.ip_network(word, strict=False))
    for _ in range(100):
        net = ipaddress.IPv4Network(f"10.{random.randint(100, 250)}.{random.randint(0, 255)}.0/24")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise StageError("no free 10.x.y.0/24 for the hosts")


def _sweep() -> None:
    """Remove namespaces and cgroups of runs whose process is gone."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        found = re.fullmatch(rf"{PREFIX}-(\d+)-\d+", line.split()[0] if line.split() else "")
        if found and not os.path.exists(f"/proc/{found[1]}"):
            with contextlib.suppress(StageError):
                ip("netns", "del", found[0])
    root = CpuCap.root()
    for path in root[0].glob(f"{CGROUP}-*") if root else ():
        pid = path.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                path.rmdir()


@contextlib.contextmanager
def namespaces(count: int) -> Iterator[tuple[Host, ...]]:
    """``count`` hosts, each on its own /30 of a free /24; removed on exit."""
    subnet, pid = _free_subnet(), os.getpid()
    made: list[Host] = []
    try:
        for k in range(count):
            base = subnet.network_address + 4 * k
            host = Host(f"{PREFIX}-{pid}-{k}", f"{PREFIX}{pid}x{k}", str(base + 2), str(base + 1))
            made.append(host)
            ip("netns", "add", host.namespace)
            ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns",
               host.namespace)  # fmt: skip
            ip("addr", "add", f"{host.gateway}/30", "dev", host.veth)
            ip("link", "set", host.veth, "up")
            for args in (("addr", "add", f"{host.address}/30", "dev", "eth0"),
                         ("link", "set", "eth0", "up"), ("link", "set", "lo", "up")):  # fmt: skip
                ip("-n", host.namespace, *args)
        yield tuple(made)
    finally:
        for host in made:
            for undo in (("netns", "del", host.namespace), ("link", "del", host.veth)):
                with contextlib.suppress(StageError):
                    ip(*undo)


class CpuCap:
    """A cgroup holding the server's processes; ``set(q)`` caps them at ``q`` cores."""

    #: A short period: with 100 ms the capped server runs 20 ms then stalls 80 ms, and the
    #: stalls, not the CPU, shape what the workers see.
    PERIOD_US = 10_000

    @staticmethod
    def root() -> tuple[Path, int] | None:
        """The cpu controller's mount and the cgroup version (2 or 1), if writable."""
        v2 = Path("/sys/fs/cgroup")
        controllers = v2 / "cgroup.controllers"
        if controllers.exists() and "cpu" in controllers.read_text().split():
            return (v2, 2) if os.access(v2, os.W_OK) else None
        v1 = Path("/sys/fs/cgroup/cpu")
        if (v1 / "cpu.cfs_quota_us").exists() and os.access(v1, os.W_OK):
            return v1, 1
        return None

    def __init__(self) -> None:
        found = self.root()
        if found is None:
            raise StageError("no writable cgroup cpu controller")
        base, self.version = found
        self.path = base / f"{CGROUP}-{os.getpid()}"
        self.path.mkdir(exist_ok=True)
        if self.version == 2:
            # The parent must hand the cpu controller down (a no-op when it already does).
            with contextlib.suppress(OSError):
                (base / "cgroup.subtree_control").write_text("+cpu")
            (self.path / "cpu.weight").write_text("10000")
        else:
            (self.path / "cpu.cfs_period_us").write_text(str(self.PERIOD_US))
            # 10x a nice-0 process's weight: other sessions' load cannot starve the server
            # below its quota (the quota is the only limit we mean to measure).
            (self.path / "cpu.shares").write_text("10240")
        self.quota: float | None = None

    def add(self, pids: Sequence[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, OSError):
                (self.path / "cgroup.procs").write_text(str(pid))

    def set(self, cores: float | None) -> None:
        """Cap at ``cores`` of CPU time per wall second; None lifts the cap."""
        self.quota = cores
        us = -1 if cores is None else max(1000, round(cores * self.PERIOD_US))
        if self.version == 2:
            (self.path / "cpu.max").write_text(f"{'max' if us < 0 else us} {self.PERIOD_US}")
        else:
            (self.path / "cpu.cfs_quota_us").write_text(str(us))

    def throttle(self) -> tuple[int, int]:
        """(periods, throttled periods) so far: their deltas say how often the cap bit."""
        stat = dict(line.split()[:2] for line in (self.path / "cpu.stat").read_text().splitlines())
        return int(stat.get("nr_periods", 0)), int(stat.get("nr_throttled", 0))

    def remove(self) -> None:
        """Move what is left back to the parent cgroup and remove this one."""
        with contextlib.suppress(OSError):
            self.set(None)
        procs = self.path / "cgroup.procs"
        for pid in procs.read_text().split() if procs.exists() else ():
            with contextlib.suppress(OSError):
                (self.path.parent / "cgroup.procs").write_text(pid)
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


@dataclass
class Stage:
    """The built stage: hosts, the capped server and how to reach and measure it."""

    store: str
    hosts: tuple[Host, ...]
    cap: CpuCap
    port: int
    server_cpu: Callable[[], float]
    fresh: Callable[[str], str]  # name -> a URL (through 127.0.0.1) of an empty store
    version: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def url_at(self, host: Host, url: str) -> str:
        """``url`` (made by ``fresh``) as seen from inside ``host``."""
        return url.replace("127.0.0.1", host.gateway, 1)


def _redis(hosts: Sequence[Host], cap: CpuCap, stack: contextlib.ExitStack) -> Stage:
    import redis

    directory = tempfile.mkdtemp(prefix="bench-hosts-redis-")
    stack.callback(shutil.rmtree, directory, ignore_errors=True)
    port = harness.free_port()
    binds = " ".join(["127.0.0.1", *(h.gateway for h in hosts)])
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", binds, "--protected-mode", "no",
         "--save", "", "--appendonly", "no", "--dir", directory, "--daemonize", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    stack.callback(stop)
    cap.add([proc.pid])
    client = redis.Redis(port=port)
    for _ in range(250):
        with contextlib.suppress(redis.ConnectionError):
            if client.ping():
                break
        time.sleep(0.02)
    ps = psutil.Process(proc.pid)

    def fresh(name: str) -> str:
        client.flushall()
        return f"redis://127.0.0.1:{port}/0"

    version = str(client.info("server")["redis_version"])
    return Stage("redis", tuple(hosts), cap, port, lambda: harness.tree_cpu(ps), fresh, version)


def _postgres(hosts: Sequence[Host], cap: CpuCap, stack: contextlib.ExitStack) -> Stage:
    subnet = str(ipaddress.ip_network(f"{hosts[0].gateway}/24", strict=False))
    cluster = PostgresCluster(listen=[h.gateway for h in hosts], trust=[subnet])
    stack.callback(cluster.remove)
    cluster.init(DURABLE_SETTINGS)
    cluster.start()
    stack.callback(lambda: cluster.stop("immediate"))
    post = psutil.Process(int((cluster.data / "postmaster.pid").read_text().split()[0]))
    # The postmaster and its background processes; backends forked later inherit.
    cap.add([post.pid, *(c.pid for c in post.children(recursive=True))])
    settings = cluster.settings(("server_version", "fsync", "synchronous_commit"))
    return Stage(
        "postgres", tuple(hosts), cap, cluster.port, lambda: harness.tree_cpu(post),
        cluster.fresh_database, settings.pop("server_version"), settings,
    )  # fmt: skip


@contextlib.contextmanager
def stage(store: str, hosts: int) -> Iterator[Stage]:
    """Namespaces, the cgroup and the server; all removed on exit, even on failure."""
    reason = missing()
    if reason is not None:
        raise StageError(reason)
    _sweep()
    with contextlib.ExitStack() as stack:
        made = stack.enter_context(namespaces(hosts))
        cap = CpuCap()
        stack.callback(cap.remove)
        yield (_redis if store == "redis" else _postgres)(made, cap, stack)
