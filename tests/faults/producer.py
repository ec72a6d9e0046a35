"""A producer process for the fault tests: enqueue COUNT jobs one at a time.

Writes each job id to OUT (one per line) and exits 0; on any error prints it and exits 1,
so the test sees every failure a real producer would (``database is locked`` included).

Example::

    python -m tests.faults.producer sqlite:///jobs.db 2000 ids-3.txt
"""

from __future__ import annotations

import sys
import traceback

from tests.faults.fault_tasks import make_app


def main(argv: list[str]) -> int:
    url, count, out = argv[0], int(argv[1]), argv[2]
    app = make_app(url)
    work = app.tasks["fault.work"]
    with open(out, "w") as f:
        try:
            for _ in range(count):
                f.write(work.enqueue(0.0).id + "\n")
        except Exception:
            traceback.print_exc()
            return 1
        finally:
            app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
