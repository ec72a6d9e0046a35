"""A small real Django project: auth models on SQLite, tasks on conveyor.

The test sets DJANGO_DB (Django's database file), CONVEYOR_JOBS_URL and
CONVEYOR_DIRECT_URL (one job store per backend: a worker runs one backend's tasks);
the worker subprocess inherits them.
"""

import os

from conveyor import Backoff

SECRET_KEY = "tests-only"
DEBUG = True
ALLOWED_HOSTS = ["testserver", "localhost"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "conveyor.contrib.django",
    "shop",
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
        "OPTIONS": {"url": os.environ["CONVEYOR_DIRECT_URL"], "enqueue_on_commit": False},
    },
}
