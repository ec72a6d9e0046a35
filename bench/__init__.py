"""conveyor's benchmark suite: conveyor against Celery, Dramatiq, RQ, Huey (and qler).

Method: ``/work/shared/design/benchmarking.md``. Run ``python -m bench run --quick`` for a
smoke run, ``python -m bench run`` for the full suite, ``python -m bench report`` to
regenerate ``BENCHMARKS.md`` from the latest full run.
"""
