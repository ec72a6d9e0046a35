"""The web dashboard (``pip install 'conveyor[web]'``): queues, jobs, workers, actions.

Imported only when asked for, so ``import conveyor`` never imports Starlette.

Example:
    >>> from conveyor.web import create_app
    >>> web = create_app("sqlite:///:memory:", token="s3cret")
"""

from conveyor.web.app import create_app

__all__ = ["create_app"]
