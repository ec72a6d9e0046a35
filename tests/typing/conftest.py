"""The typing files are read by the type checkers only: importing them would run their
deliberately wrong calls (``--doctest-modules`` imports every module under tests/)."""

collect_ignore = ["tasks_typed.py", "errors_expected.py", "classtask_pyright.py"]
