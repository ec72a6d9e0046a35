"""A small real Django project: auth models on SQLite (or on MariaDB, with
DJANGO_MYSQL_URL set), tasks on conveyor.

The test sets DJANGO_DB (Django's database file), CONVEYOR_JOBS_URL, CONVEYOR_DIRECT_URL
and CONVEYOR_TIMED_URL (one job store per backend: a worker runs one backend's tasks);
the worker subprocess inherits them. The "together" backend's store is Django's own
database file (jobs enqueued in Django's transaction); with DJANGO_PG_URL set (a
PostgreSQL the tests started), a "pg" database and its "together_pg" backend too.
"""

import os
from urllib.parse import urlsplit

from conveyor import Backoff

SECRET_KEY = "tests-only"
DEBUG = True
ALLOWED_HOSTS = ["testserver", "localhost"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.admin",  # the jobs admin (tests/with_django/test_admin.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "conveyor.contrib.django",
    "shop",
]
MIDDLEWARE = [  # what Django's admin needs
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
ROOT_URLCONF = "djproject.urls"
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["DJANGO_DB"]},
}
TASKS = {
    "default": {
        "BACKEND": "conveyor.contrib.django.ConveyorBackend",
        "QUEUES": ["default", "mail"],
        "OPTIONS": {
            "url": os.environ["CONVEYOR_JOBS_URL"],
            # App() options: two attempts, the retry due at once (one burst runs both)
            "max_attempts": 2,
            "retry": Backoff(base=0, jitter=0),
        },
    },
    "direct": {
        "BACKEND": "conveyor.contrib.django.ConveyorBackend",
        "OPTIONS": {"url": os.environ["CONVEYOR_DIRECT_URL"], "enqueue": "immediately"},
    },
    "together": {
        "BACKEND": "conveyor.contrib.django.ConveyorBackend",
        "OPTIONS": {"url": f"sqlite:///{os.environ['DJANGO_DB']}", "enqueue": "in_transaction"},
    },
    # Periodic tasks declared in settings: the worker enqueues shop.timed.beat each second.
    "timed": {
        "BACKEND": "conveyor.contrib.django.ConveyorBackend",
        "OPTIONS": {
            "url": os.environ["CONVEYOR_TIMED_URL"],
            "periodic": {
                "heartbeat": {"task": "shop.timed.beat", "every": 1, "args": ["settings"]},
            },
        },
    },
}
if os.environ.get("DJANGO_MYSQL_URL"):
    # Django on a MySQL/MariaDB database (CONVEYOR_DJANGO_DB=mariadb): Django's own
    # backend over mysqlclient; the job stores are mariadb:// databases of the same server.
    _my = urlsplit(os.environ["DJANGO_MYSQL_URL"])
    DATABASES["default"] = {
        "ENGINE": "django.db.backends.mysql",
        "HOST": _my.hostname,
        "PORT": _my.port,
        "NAME": _my.path.lstrip("/"),
        "USER": _my.username,
        "PASSWORD": _my.password or "",
        "OPTIONS": {"charset": "utf8mb4"},
    }
    # "together" (joining Django's transaction) stays a SQLite file's: MariaDB joins no
    # application transaction yet (docs/mariadb.md); its tests do not run in this mode.
if os.environ.get("DJANGO_PG_URL"):
    _pg = urlsplit(os.environ["DJANGO_PG_URL"])
    DATABASES["pg"] = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": _pg.hostname,
        "PORT": _pg.port,
        "NAME": _pg.path.lstrip("/"),
        "USER": _pg.username,
        "PASSWORD": _pg.password or "",
    }
    TASKS["together_pg"] = {
        "BACKEND": "conveyor.contrib.django.ConveyorBackend",
        "OPTIONS": {
            "url": os.environ["CONVEYOR_TOGETHER_PG_URL"],
            "enqueue": "in_transaction",
            "database": "pg",
        },
    }
