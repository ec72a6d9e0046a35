"""``python -m conveyor.cli`` = the ``conveyor`` command."""

from conveyor.cli.main import main

main()
