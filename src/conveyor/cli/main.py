"""Entry point of the ``conveyor`` console script (and of ``python -m conveyor``).

Every command runs through one error policy (:mod:`conveyor.cli.errors`): an expected
failure is one ``Error: ...`` line on stderr with exit status 2 (usage) or 1 (runtime);
``--debug`` or ``CONVEYOR_DEBUG=1`` adds the traceback.

Example::

    conveyor --debug status --url sqlite:///missing.db   # traceback, then the Error: line
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

from conveyor import __version__
from conveyor.cli.errors import debug_requested, run_reporting

#: Every command: name -> (module, attribute). Imported when it is run (or listed by
#: --help), so `conveyor worker` does not load what only the other commands use (rich
#: tables, the dashboard, the exporters): issue 16's cold-start budget.
COMMANDS = {
    "worker": ("conveyor.cli.worker", "worker"),
    "status": ("conveyor.cli.status", "status"),
    "demo": ("conveyor.cli.demo", "demo"),
    "jobs": ("conveyor.cli.jobs", "jobs"),
    "job": ("conveyor.cli.jobs", "job"),
    "retry": ("conveyor.cli.actions", "retry"),
    "cancel": ("conveyor.cli.actions", "cancel"),
    "release": ("conveyor.cli.actions", "release"),
    "delete": ("conveyor.cli.actions", "delete"),
    "purge": ("conveyor.cli.actions", "purge"),
    "send": ("conveyor.cli.steps", "send"),
    "export": ("conveyor.cli.export", "export"),
    "backup": ("conveyor.cli.admin", "backup"),
    "check": ("conveyor.cli.admin", "check"),
    "audit": ("conveyor.cli.action_log", "audit"),
    "restore": ("conveyor.cli.restore", "restore"),
    "import": ("conveyor.cli.importing", "import_jobs"),
    "queues": ("conveyor.cli.queues", "queues"),
    "limits": ("conveyor.cli.limits", "limits"),
    "schedules": ("conveyor.cli.schedules", "schedules"),
    "search-index": ("conveyor.cli.search_index", "search_index"),
    "queue-counts": ("conveyor.cli.queue_counts", "queue_counts"),
    "migrate": ("conveyor.cli.migrate", "migrate"),
    "dashboard": ("conveyor.cli.dashboard", "dashboard"),
    "enqueue": ("conveyor.cli.enqueue", "enqueue"),
    "config": ("conveyor.cli.config", "config_command"),
    "migrate-schema": ("conveyor.cli.schema", "migrate_schema"),
}


class ConveyorGroup(click.Group):
    """A click group whose usage errors and known failures print one line, and whose
    commands are imported on first use (:data:`COMMANDS`).

    Click itself is run in non-standalone mode, so its exceptions reach
    :func:`run_reporting` instead of its own multi-line usage report.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

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


def main() -> None:
    cli(prog_name="conveyor")
