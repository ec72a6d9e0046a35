"""conveyor's benchmark suite: conveyor against Celery, Dramatiq, RQ, Huey (and qler).

Method: ``/work/shared/design/benchmarking.md``. Run ``python -m bench run --quick`` for a
smoke run, ``python -m bench run`` for the full suite, ``python -m bench report`` to
regenerate ``BENCHMARKS.md`` from the latest full run. The published run uses
``.venv-bench`` (``make bench-venv``): every arm on one Python 3.12, because qler requires
Python >= 3.12; on 3.11 the suite runs without the qler arms.
"""
