"""Entry point of the ``conveyor`` console script."""

from __future__ import annotations

import click

from conveyor import __version__
from conveyor.cli.actions import cancel, delete, purge, retry
from conveyor.cli.admin import backup, check
from conveyor.cli.dashboard import dashboard
from conveyor.cli.demo import demo
from conveyor.cli.export import export
from conveyor.cli.jobs import job, jobs
from conveyor.cli.migrate import migrate
from conveyor.cli.queues import queues
from conveyor.cli.status import status
from conveyor.cli.worker import worker


@click.group()
@click.version_option(__version__, prog_name="conveyor")
def cli() -> None:
    """conveyor: background jobs for Python."""


cli.add_command(worker)
cli.add_command(status)
cli.add_command(demo)
for _command in (jobs, job, retry, cancel, delete, purge, export, backup, check, queues, migrate):
    cli.add_command(_command)
cli.add_command(dashboard)


def main() -> None:
    cli()
