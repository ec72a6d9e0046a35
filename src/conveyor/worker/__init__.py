"""The worker: fetcher -> executor -> completer, plus background services."""
