"""Worker "hosts" in Linux network namespaces, each behind a veth pair whose cable the
test can pull (``cut``) and plug back (``heal``): a real network partition on one
machine, with no traffic leaving it.

Each host is a namespace ``cv-<pid>-<run><letter>`` holding one veth end with the address
``10.R.S.4k+2/30``; the other end stays in the root namespace with ``10.R.S.4k+1``, where
the servers listen (``RedisServer(bind=...)``, ``PostgresServer(listen=..., trust=...)``).
``R.S`` is a /24 that no interface of the machine uses. Namespaces need root and
``ip`` (iproute2); without them the caller skips with a reason locally and fails when
``CI=true`` (``require_namespaces``). Everything made is removed on exit, even when the
test fails (and what a killed run left behind is removed by the next one).

Example (in a test)::

    with hosts("a", "b") as (a, b):
        server = RedisServer(tmp_path, bind=[a.gateway, b.gateway]).start()
        proc = subprocess.Popen(a.command(["redis-cli", "-u", server.url_at(a.gateway), "ping"]))
        a.cut()   # a's packets go nowhere now; b still reaches the server
        a.heal()
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import random
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

#: Makes names unique between the cases of one run (the pid tells runs apart).
_runs = itertools.count()


def require_namespaces() -> None:
    """Skip (locally) or fail (``CI=true``) when network namespaces cannot be made here."""
    reason = None
    if shutil.which("ip") is None:
        reason = "`ip` (iproute2) not found: cannot make network namespaces"
    elif os.geteuid() != 0:
        reason = "network namespaces need root (ip netns add)"
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def ip(*args: str) -> None:
    """Run ``ip args``; its stderr in the error when it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise NamespaceError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class NamespaceError(RuntimeError):
    """An ``ip`` command failed (no CAP_NET_ADMIN in a container, a name taken...)."""


@dataclass(frozen=True)
class Host:
    """One namespace: ``address`` inside it, ``gateway`` at the root end of its cable."""

    namespace: str
    veth: str  # the root namespace's end: the one cut() takes down
    address: str
    gateway: str

    def command(self, args: Sequence[str]) -> list[str]:
        """``args`` run inside this host's namespace (same files, same pids, its network)."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def cut(self) -> None:
        """Pull the cable: the link goes down, packets either way are lost (TCP connections
        stay open and retransmit, as across a real partition)."""
        ip("link", "set", self.veth, "down")

    def heal(self) -> None:
        ip("link", "set", self.veth, "up")


def _free_subnet() -> ipaddress.IPv4Network:
    """A 10.R.S.0/24 that no address or route of the machine overlaps."""
    shown = (
        subprocess.run(
            ["ip", "-4", "-o", "route", "show", "table", "all"], capture_output=True, text=True
        ).stdout
        + subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    )
    used = []
    for word in shown.split():
        with contextlib.suppress(ValueError):
            used.append(ipaddress.ip_network(word, strict=False))
    for _ in range(100):
        net = ipaddress.IPv4Network(f"10.{random.randint(100, 250)}.{random.randint(0, 255)}.0/24")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise NamespaceError("no free 10.x.y.0/24 for the test hosts")


def _sweep_leftovers() -> None:
    """Remove the namespaces of runs whose process is gone (killed before its cleanup);
    their veth pairs go with them."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        found = re.fullmatch(r"cv-(\d+)-\d+[a-z]", name)
        if found and not os.path.exists(f"/proc/{found[1]}"):
            with contextlib.suppress(NamespaceError):
                ip("netns", "del", name)


def _make(host: Host, prefix: int) -> None:
    ip("netns", "add", host.namespace)
    ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
    ip("addr", "add", f"{host.gateway}/{prefix}", "dev", host.veth)
    ip("link", "set", host.veth, "up")
    inside = ("-n", host.namespace)
    ip(*inside, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
    ip(*inside, "link", "set", "eth0", "up")
    ip(*inside, "link", "set", "lo", "up")


def _remove(host: Host) -> None:
    # Deleting the namespace destroys its veth end, and with it the pair; the explicit
    # link delete covers a namespace that was never made (a failure half-way).
    for args in (("netns", "del", host.namespace), ("link", "del", host.veth)):
        with contextlib.suppress(NamespaceError):
            ip(*args)


@contextlib.contextmanager
def hosts(*letters: str) -> Iterator[tuple[Host, ...]]:
    """One namespace per letter, each on its own /30 of a free /24; removed on exit."""
    require_namespaces()
    _sweep_leftovers()
    subnet = _free_subnet()
    pid, run = os.getpid(), next(_runs)
    made: list[Host] = []
    try:
        for n, letter in enumerate(letters):
            base = subnet.network_address + 4 * n
            # Interface names are at most 15 characters: the veth's has no dashes.
            namespace, veth = f"cv-{pid}-{run}{letter}", f"cv{pid}x{run}{letter}"
            host = Host(namespace, veth, str(base + 2), str(base + 1))
            made.append(host)
            try:
                _make(host, 30)
            except NamespaceError as exc:  # e.g. a container without CAP_SYS_ADMIN
                if os.environ.get("CI", "").lower() == "true":
                    raise
                pytest.skip(f"cannot make network namespaces here: {exc}")
        yield tuple(made)
    finally:
        for host in made:
            _remove(host)


def subnet_of(hosts: Sequence[Host]) -> str:
    """The /24 holding every host (what pg_hba trusts)."""
    return str(ipaddress.ip_network(f"{hosts[0].gateway}/24", strict=False))
