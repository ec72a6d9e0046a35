"""Entry point of the ``conveyor`` console script (and of ``python -m conveyor``).

Every command runs through one error policy (:mod:`conveyor.cli.errors`): an expected
failure is one ``Error: ...`` line on stderr with exit status 2 (usage) or 1 (runtime);
``--debug`` or ``CONVEYOR_DEBUG=1`` adds the traceback.

Example::

    conveyor --debug status --url sqlite:///missing.db   # traceback, then the Error: line
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from conveyor import __version__
from conveyor.cli.actions import cancel, delete, purge, retry
from conveyor.cli.admin import backup, check
from conveyor.cli.config import config_command
from conveyor.cli.dashboard import dashboard
from conveyor.cli.demo import demo
from conveyor.cli.enqueue import enqueue
from conveyor.cli.errors import debug_requested, run_reporting
from conveyor.cli.export import export
from conveyor.cli.jobs import job, jobs
from conveyor.cli.migrate import migrate
from conveyor.cli.queues import queues
from conveyor.cli.schema import migrate_schema
from conveyor.cli.status import status
from conveyor.cli.worker import worker


class ConveyorGroup(click.Group):
    """A click group whose usage errors and known failures print one line.

    Click itself is run in non-standalone mode, so its exceptions reach
    :func:`run_reporting` instead of its own multi-line usage report.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        argv = list(sys.argv[1:] if args is None else args)

        def body() -> Any:
            return super(ConveyorGroup, self).main(argv, prog_name, complete_var, False, **extra)

        code = run_reporting(body, debug_requested(argv))
        # Non-standalone click returns the exit code of ``ctx.exit(n)`` (--help, --version)
        # and the command's return value otherwise; conveyor's commands return None.
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=ConveyorGroup)
@click.version_option(__version__, prog_name="conveyor")
@click.option(
    "--debug",
    is_flag=True,
    envvar="CONVEYOR_DEBUG",
    help="On an error, print the traceback too (also: CONVEYOR_DEBUG=1).",
)
def cli(debug: bool) -> None:
    """conveyor: background jobs for Python.

    Store URL: --url, else the app's own App(url), else $CONVEYOR_URL, else
    sqlite:///conveyor.db. Shell completion: eval "$(_CONVEYOR_COMPLETE=bash_source conveyor)".
    """


cli.add_command(worker)
cli.add_command(status)
cli.add_command(demo)
for _command in (
    jobs,
    job,
    retry,
    cancel,
    delete,
    purge,
    export,
    backup,
    check,
    queues,
    migrate,
    migrate_schema,
):
    cli.add_command(_command)
cli.add_command(dashboard)
cli.add_command(enqueue)
cli.add_command(config_command)


def main() -> None:
    cli(prog_name="conveyor")
