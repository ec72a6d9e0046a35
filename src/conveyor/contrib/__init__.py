"""Integrations with other frameworks, each imported only by the programs that use it.

- :mod:`conveyor.contrib.asgi`: run an embedded worker with an ASGI app (FastAPI,
  Starlette) through its lifespan.
"""
