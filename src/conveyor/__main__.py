"""``python -m conveyor`` = the ``conveyor`` command (for when the script is not on PATH).

Example::

    python -m conveyor status --url sqlite:///jobs.db
"""

from conveyor.cli.main import main

main()
