"""``Job``: the unmanaged model the jobs admin (:mod:`conveyor.contrib.django.admin`) is
registered under. It has no table and is never queried: the admin reads conveyor's store.

Why a model at all: Django's admin lists, links and authorises per model. Registering
one gives the app index its "Jobs" row, the admin's URL names
(``admin:conveyor_job_changelist``, ``admin:conveyor_job_change``), breadcrumbs, and
two permissions Django creates at ``migrate`` like any model's (content type
``conveyor.job``): ``conveyor.view_job`` (see jobs) and ``conveyor.change_job`` (retry
and cancel them). ``managed = False``: ``migrate`` creates no table for it, and the app
ships no migration (``makemigrations`` names only apps that have migrations).

The primary key is declared (a job id) so Django's ``DEFAULT_AUTO_FIELD`` warning
(``models.W042``) never shows in a project that leaves that setting unset.

Example (in a configured project)::

    user.has_perm("conveyor.change_job")   # may retry and cancel in the admin
"""

from __future__ import annotations

from django.db import models


class Job(models.Model):  # type: ignore[misc]  # Django is untyped (Any)
    """A conveyor job, as far as Django's admin and permissions need one."""

    id = models.CharField(primary_key=True, max_length=64)

    class Meta:
        managed = False
        app_label = "conveyor"
        db_table = "conveyor_admin_job"  # never created, never queried
        verbose_name = "job"
        verbose_name_plural = "jobs"
        # Viewing and acting: nothing is added or deleted through the admin.
        default_permissions = ("view", "change")

    def __str__(self) -> str:
        return str(self.id)
