"""Integrations with other frameworks, each imported only by the programs that use it.

- :mod:`conveyor.contrib.asgi`: run an embedded worker with an ASGI app (FastAPI,
  Starlette) through its lifespan.
- :mod:`conveyor.contrib.django`: a backend for Django's task framework
  (``django.tasks``) and ``manage.py conveyor_worker``.
"""
