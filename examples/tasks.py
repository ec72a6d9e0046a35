"""The shop's background jobs: a receipt mailer the web app enqueues, and a periodic sweep.

Run the worker from this directory (both queues the tasks use):

    conveyor worker tasks:app --queue mail --queue default

The store is ``$CONVEYOR_URL``, else ``sqlite:///conveyor.db`` here: the web app
(``web.py``) and the worker find the same file as long as they start in one directory.
Receipts are "sent" by writing them to ``outbox/`` (``$SHOP_OUTBOX``), so you can see
them; the sweep removes receipts older than ``$SHOP_KEEP_SECONDS`` (a day).
"""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta
from pathlib import Path

import conveyor

app = conveyor.App()  # $CONVEYOR_URL, else sqlite:///conveyor.db
log = logging.getLogger("shop")

OUTBOX = Path(os.environ.get("SHOP_OUTBOX", "outbox"))
KEEP_SECONDS = float(os.environ.get("SHOP_KEEP_SECONDS", 86400))
# How often the sweep runs; a minute in real life, shorter to watch it fire.
SWEEP_EVERY = timedelta(seconds=float(os.environ.get("SHOP_SWEEP_SECONDS", 60)))


@app.task(name="shop.send_receipt", queue="mail", max_attempts=5, timeout=30)
def send_receipt(order_id: int, email: str) -> str:
    """Write the receipt to the outbox (stands for an SMTP call); returns its file name."""
    if "@" not in email:
        raise ValueError(f"not an e-mail address: {email!r}")  # retried, then dead
    OUTBOX.mkdir(exist_ok=True)
    receipt = OUTBOX / f"order-{order_id}.txt"
    receipt.write_text(f"To: {email}\nSubject: your order #{order_id}\n\nThank you!\n")
    log.info("receipt for order %s sent to %s", order_id, email)  # stored with the job
    return receipt.name


@app.periodic(every=SWEEP_EVERY)
@app.task(name="shop.sweep_outbox")
def sweep_outbox() -> int:
    """Delete receipts older than KEEP_SECONDS; returns how many it removed."""
    cutoff = time.time() - KEEP_SECONDS
    removed = 0
    for receipt in OUTBOX.glob("order-*.txt"):
        if receipt.stat().st_mtime < cutoff:
            receipt.unlink()
            removed += 1
    return removed
