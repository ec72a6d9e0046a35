"""conveyor's benchmark suite: conveyor against Celery, Dramatiq, RQ, Huey (and qler), and
on PostgreSQL against procrastinate and oban-py (one private cluster the suite starts,
bench/postgres_cluster.py; a fresh database per measurement).

Method: ``/work/shared/design/benchmarking.md``. Run ``python -m bench run --quick`` for a
smoke run, ``python -m bench run`` for the full suite, ``python -m bench report`` to
regenerate ``BENCHMARKS.md`` from the latest full run; ``python -m bench run --suite W6
--arms conveyor-sqlite-default --append bench/results/<stamp>`` adds a scenario to a
finished run's directory (at its scale), for the report to show. The published run uses
``.venv-bench`` (``make bench-venv``): every arm on one Python 3.12, because qler requires
Python >= 3.12; on 3.11 the suite runs without the qler arms.

Every arm runs the same job body (:mod:`bench.jobs`), which marks completion with one
``os.write`` of a 64-byte record to the measurement's ``O_APPEND`` marker file; the
harness (:mod:`bench.marker`) detects completion from the file's size, verifies that
every job ran exactly once from the records, and measures the marker's own cost at the
start of every run (``python -m bench.marker`` alone), checking it stays below 5% of the
fastest arm's time per job. Results from before issue 16 used a Redis round-trip marker
(~85 µs a job); each report names the marker its run used.
"""
