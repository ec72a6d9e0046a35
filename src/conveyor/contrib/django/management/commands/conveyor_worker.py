"""``python manage.py conveyor_worker [--backend ALIAS] [conveyor worker options]``.

The command is ``conveyor worker`` itself (src/conveyor/cli/worker.py): the same click
options, defaults, configuration files and behaviour, with APP fixed to the App of
``TASKS[ALIAS]`` (:mod:`conveyor.contrib.django.worker_app`). Django's own argument
parser is bypassed (``run_from_argv``) so that every option, and ``--help``, is click's.
"""

from __future__ import annotations

from typing import Any

import click
from django.core.management.base import BaseCommand, CommandError

from conveyor.cli.worker import worker
from conveyor.contrib.django import worker_app
from conveyor.contrib.django.backend import backend_for
from conveyor.errors import ConfigurationError


def _run(backend: str, **params: Any) -> None:
    try:
        backend_for(backend)  # a wrong alias is one line here, not a missing attribute
    except ConfigurationError as exc:
        raise click.ClickException(str(exc)) from exc
    # worker's callback takes the click context itself (pass_context): the current one,
    # whose parameters are the worker's, so flags-versus-files precedence is unchanged.
    worker.callback(app_spec=worker_app.spec(backend), **params)  # type: ignore[misc]


#: ``conveyor worker``'s parameters minus APP, plus the TASKS alias.
command = click.Command(
    "conveyor_worker",
    callback=_run,
    params=[
        click.Option(
            ["--backend"],
            default="default",
            show_default=True,
            help="The TASKS alias whose ConveyorBackend's jobs to run.",
        ),
        *(p for p in worker.params if p.name != "app_spec"),
    ],
    help="Run conveyor jobs of Django tasks (the options of `conveyor worker`). "
    "TERM/INT stop gracefully.",
)


class Command(BaseCommand):  # type: ignore[misc]  # Django is untyped (Any)
    help = command.help or ""

    def run_from_argv(self, argv: list[str]) -> None:
        prog = f"{argv[0].rsplit('/', 1)[-1]} {argv[1]}"
        command.main(args=argv[2:], prog_name=prog)

    def handle(self, *args: Any, **options: Any) -> None:
        # Only call_command() comes here (run_from_argv does not): its argparse parser
        # knows none of the worker's options.
        raise CommandError(
            "run the worker as `python manage.py conveyor_worker ...` (call_command is "
            "not supported; in-process, use conveyor.Worker(conveyor_app()))"
        )
