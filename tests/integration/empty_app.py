"""An app whose module defines no task (the mistake the worker's start-up warns about:
the tasks live in a module nobody imports). URL from $CONVEYOR_URL."""

from __future__ import annotations

import conveyor

app = conveyor.App()
