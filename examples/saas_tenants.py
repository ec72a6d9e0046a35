"""A multi-tenant SaaS on one queue: flow control by key (docs/flow.md).

- ``sync_contacts``: fair across tenants (``fair_key``), so the big tenant's import does
  not starve the small ones; the enterprise tenant gets two turns per round.
- ``post_ledger``: one tenant's ledger entries one at a time, in the order they came
  (``sequence_key``); a bad entry blocks the rest of that tenant's ledger only.
- ``call_crm``: at most 2 calls at once per tenant (``concurrency`` + ``limit_key``),
  changed while running with ``conveyor limits set``.

Run: ``python saas_tenants.py`` (a store in a temporary directory, a worker in this
process); it prints the order the jobs started in.
"""

from __future__ import annotations

import os
import tempfile
import threading

import conveyor

store = os.path.join(tempfile.mkdtemp(), "saas.db")
app = conveyor.App(os.environ.get("SAAS_URL", f"sqlite:///{store}"))
started: list[str] = []
lock = threading.Lock()


def _note(text: str) -> None:
    with lock:
        started.append(text)


@app.task(fair_key=lambda tenant, contact: tenant, fair_weights={"enterprise": 2})
def sync_contacts(tenant: str, contact: int) -> None:
    _note(tenant)


@app.task(sequence_key=lambda tenant, entry: tenant, max_attempts=1)
def post_ledger(tenant: str, entry: int) -> int:
    if entry < 0:
        raise ValueError(f"negative entry {entry}")
    _note(f"{tenant}:{entry}")
    return entry


@app.task(concurrency=2, limit_key=lambda tenant, path: tenant)
def call_crm(tenant: str, path: str) -> None: ...


def main() -> None:
    sync_contacts.enqueue_many([("bigcorp", n) for n in range(200)])
    for tenant in ("enterprise", "smallshop"):
        sync_contacts.enqueue_many([(tenant, n) for n in range(5)])
    ledger = [post_ledger.enqueue("acme", n) for n in (1, 2, 3)]
    worker = conveyor.Worker(app, concurrency=1).start()
    try:
        for job in ledger:
            job.wait(timeout=60)
        while len(started) < 213:
            worker.join(timeout=0.05)
    finally:
        worker.stop()
    small = [i for i, t in enumerate(started) if t == "smallshop"]
    syncs = [t for t in started if ":" not in t]
    print("first 12 syncs:", " ".join(syncs[:12]))
    print("smallshop's jobs started at positions:", small)
    print("acme's ledger ran in order:", [t for t in started if t.startswith("acme:")])
    app.close()


if __name__ == "__main__":
    main()
