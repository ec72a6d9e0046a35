"""The PostgreSQL backend (``postgresql://``): see backend.py and docs/postgres.md."""
