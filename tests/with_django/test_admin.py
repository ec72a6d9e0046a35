"""The jobs admin (conveyor.contrib.django.admin) in the test project's real admin site:
Django's test client logged in as a superuser, as staff with only ``view_job``, as staff
with no conveyor permission and as a non-staff user, against the jobs a real
``manage.py conveyor_worker --burst`` left in the SQLite store file (and a PostgreSQL
store when the session has one)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests.with_django.conftest import manage, require_postgres
from tests.with_django.requires import require_django

require_django()

from django.test import Client  # noqa: E402

from conveyor import JobState  # noqa: E402

if TYPE_CHECKING:
    from django.contrib.auth.models import User

pytestmark = pytest.mark.slow
# Django's models import once the project is set up (the django_project fixture): inside
# the tests.

JOBS = "/admin/conveyor/job/"


def _page(job_id: str, query: str = "") -> str:
    return f"{JOBS}{job_id}/change/{query}"


@dataclass(frozen=True)
class Jobs:
    dead: str  # send_welcome to a "bounce" user: both attempts failed
    succeeded: str
    queued: list[str]  # count_users, enqueued after the worker ran


@pytest.fixture(scope="module")
def jobs(django_project: dict[str, str]) -> Jobs:
    from django.contrib.auth.models import User
    from shop.reports import count_users
    from shop.tasks import send_welcome

    tag = uuid.uuid4().hex[:8]
    bounce = User.objects.create(username=f"bounce-admin-{tag}")
    fine = User.objects.create(username=f"admin-{tag}")
    dead = send_welcome.enqueue(bounce.pk).id  # autocommit: written at once
    succeeded = send_welcome.enqueue(fine.pk).id
    proc = manage(django_project, "conveyor_worker", "--burst")
    assert proc.returncode == 0, proc.stderr
    assert _state(dead) is JobState.DEAD and _state(succeeded) is JobState.SUCCEEDED
    queued = [count_users.enqueue().id for _ in range(3)]
    return Jobs(dead, succeeded, queued)


def _store(alias: str = "default") -> Any:
    from conveyor.contrib.django import conveyor_app

    return conveyor_app(alias).backend


def _record(job_id: str, alias: str = "default") -> Any:
    (record,) = _store(alias).job_get_many([job_id])
    return record


def _state(job_id: str, alias: str = "default") -> JobState:
    state: JobState = _record(job_id, alias).state
    return state


def _user(*perms: str, staff: bool = True, superuser: bool = False) -> User:
    from django.contrib.auth.models import Permission, User

    name = f"u-{uuid.uuid4().hex[:10]}"
    if superuser:
        return User.objects.create_superuser(name, f"{name}@example.com", None)
    user = User.objects.create_user(name, is_staff=staff)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="conveyor", codename__in=perms)
    )
    return user


def _client(user: User, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def _text(response: Any) -> str:
    return str(response.content.decode())


def _listed(html: str) -> list[str]:
    """The job ids of a list page's rows, in order."""
    return re.findall(r'<th scope="row"><a href="[^"]*">([^<]+)</a></th>', html)


def _token(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found is not None, "no CSRF token in the page"
    return found.group(1)


def test_django_creates_a_view_and_a_change_permission_for_jobs(jobs: Jobs) -> None:
    from django.contrib.auth.models import Permission

    codenames = Permission.objects.filter(content_type__app_label="conveyor").values_list(
        "codename", flat=True
    )
    assert sorted(codenames) == ["change_job", "view_job"]


def test_the_admin_index_and_the_app_index_list_jobs(jobs: Jobs) -> None:
    client = _client(_user(superuser=True))
    for url in ("/admin/", "/admin/conveyor/"):
        html = _text(client.get(url))
        assert f'href="{JOBS}"' in html and ">Jobs<" in html
    assert 'href="/admin/conveyor/job/add/"' not in _text(client.get("/admin/"))  # no adding


def test_the_list_shows_the_store_s_jobs_newest_first(jobs: Jobs) -> None:
    response = _client(_user("view_job")).get(JOBS)
    assert response.status_code == 200
    html = _text(response)
    listed = _listed(html)
    assert {jobs.dead, jobs.succeeded, *jobs.queued} <= set(listed)
    assert listed == sorted(listed, reverse=True)  # ids are creation order
    assert listed.index(jobs.queued[-1]) < listed.index(jobs.dead)
    # Django's own layout: breadcrumbs to the app, the filter sidebar
    assert '<a href="/admin/conveyor/">Conveyor</a>' in html
    assert 'id="changelist-filter"' in html and "By state" in html and "By queue" in html


def test_filters_by_state_queue_and_task(jobs: Jobs) -> None:
    client = _client(_user("view_job"))
    dead = _listed(_text(client.get(JOBS, {"state": "dead"})))
    assert jobs.dead in dead and jobs.succeeded not in dead and jobs.queued[0] not in dead
    assert {_state(i) for i in dead} == {JobState.DEAD}
    mail = _listed(_text(client.get(JOBS, {"queue": "mail"})))
    assert {jobs.dead, jobs.succeeded} <= set(mail) and not set(jobs.queued) & set(mail)
    by_task = _listed(_text(client.get(JOBS, {"task": "shop.reports.count_users"})))
    assert set(jobs.queued) <= set(by_task) and jobs.dead not in by_task
    both = _text(client.get(JOBS, {"state": "succeeded", "task": "shop.reports.count_users"}))
    assert not set(jobs.queued) & set(_listed(both))
    # the selected filter is marked, and a row's task links to that task's jobs
    assert '<li class="selected"><a href="?state=succeeded&amp;task=' in both
    assert 'href="?task=shop.tasks.send_welcome"' in _text(client.get(JOBS))


def test_pages_follow_each_other_without_gaps_or_repeats(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.contrib import admin

    from conveyor.backends.base import JobListParams
    from conveyor.contrib.django.models import Job

    monkeypatch.setattr(admin.site._registry[Job], "list_per_page", 2)
    client = _client(_user("view_job"))
    wanted = {"state": "queued", "task": "shop.reports.count_users"}
    seen: list[str] = []
    url: str | None = f"{JOBS}?state=queued&task=shop.reports.count_users"
    while url is not None:
        html = _text(client.get(url))
        rows = _listed(html)
        assert 1 <= len(rows) <= 2
        seen += rows
        found = re.search(r'href="(\?[^"]*after=[^"]*)" class="next-page"', html)
        url = JOBS + found.group(1).replace("&amp;", "&") if found else None
    stored = _store().job_list(
        JobListParams(state=JobState.QUEUED, task=wanted["task"], limit=10_000, descending=True)
    )
    assert seen == [j.id for j in stored]  # every page, in order, each job once
    assert set(jobs.queued) <= set(seen)
    assert f"{len(seen)} jobs" in html


def test_a_job_s_page_shows_arguments_error_and_attempts(jobs: Jobs) -> None:
    client = _client(_user("view_job"))
    html = _text(client.get(_page(jobs.dead)))
    record = _record(jobs.dead)
    assert "shop.tasks.send_welcome" in html and "dead" in html
    assert f"<code>{record.payload.split('[')[1].split(']')[0]}</code>" in html  # args[0]
    assert "MailBounced" in html and "no mailbox for bounce-admin-" in html
    attempts = re.search(r'<table id="job-attempts">(.*?)</table>', html, re.S)
    assert attempts is not None and attempts.group(1).count("<tr>") == 3  # head + 2 attempts
    assert f'<li><a href="{JOBS}">Jobs</a></li>' in html  # breadcrumbs back to the list
    done = _text(client.get(_page(jobs.succeeded)))
    assert "&quot;welcome admin-" in done  # the result, as JSON text


def test_a_missing_job_redirects_to_the_list_with_a_message(jobs: Jobs) -> None:
    client = _client(_user("view_job"))
    response = client.get(_page("01NOSUCHJOB0000000000000000"), follow=True)
    assert response.redirect_chain == [(JOBS, 302)]
    assert "No job with id &#x27;01NOSUCHJOB0000000000000000&#x27;" in _text(response)


def test_retry_a_dead_job_from_its_page(jobs: Jobs) -> None:
    from django.contrib.admin.models import LogEntry

    user = _user("view_job", "change_job")
    client = _client(user, csrf=True)
    page = _text(client.get(_page(jobs.dead)))
    assert 'value="retry_jobs"' in page and 'value="cancel_jobs"' not in page  # dead: retry only
    response = client.post(
        _page(jobs.dead), {"action": "retry_jobs", "csrfmiddlewaretoken": _token(page)}, follow=True
    )
    assert response.redirect_chain == [(_page(jobs.dead), 302)]
    assert "Retried 1 of 1 selected job(s)." in _text(response)
    record = _record(jobs.dead)
    assert (record.state, record.attempt) == (JobState.QUEUED, 0)
    logged = LogEntry.objects.get(user=user, object_id=jobs.dead)
    assert "Retried" in logged.get_change_message()


def test_cancel_queued_jobs_from_the_list(jobs: Jobs) -> None:
    client = _client(_user("view_job", "change_job"), csrf=True)
    html = _text(client.get(JOBS))
    assert '<option value="cancel_jobs">' in html
    target, kept = jobs.queued[0], jobs.queued[1]
    response = client.post(
        f"{JOBS}?state=queued",
        {
            "action": "cancel_jobs",
            "_selected_action": [target, jobs.succeeded],  # a finished one is left alone
            "csrfmiddlewaretoken": _token(html),
        },
        follow=True,
    )
    assert response.redirect_chain == [(f"{JOBS}?state=queued", 302)]
    assert "Cancelled 1 of 2 selected job(s)." in _text(response)
    record = _record(target)
    assert (record.state, record.reason) == (JobState.CANCELLED, "cancelled from the Django admin")
    assert _state(kept) is JobState.QUEUED and _state(jobs.succeeded) is JobState.SUCCEEDED


def test_an_action_that_does_not_apply_changes_nothing(jobs: Jobs) -> None:
    client = _client(_user(superuser=True))
    response = client.post(_page(jobs.succeeded), {"action": "retry_jobs"}, follow=True)
    assert "Retried 0 of 1 selected job(s). Retry applies to cancelled, dead jobs only." in _text(
        response
    )
    assert _state(jobs.succeeded) is JobState.SUCCEEDED


def test_a_view_only_user_sees_jobs_but_cannot_act(jobs: Jobs) -> None:
    target = jobs.queued[2]
    client = _client(_user("view_job"))
    html = _text(client.get(JOBS))
    assert target in _listed(html)
    assert 'name="action"' not in html and 'name="_selected_action"' not in html
    assert 'name="action"' not in _text(client.get(_page(target)))
    refused = client.post(JOBS, {"action": "cancel_jobs", "_selected_action": [target]})
    assert refused.status_code == 403
    assert client.post(_page(target), {"action": "cancel_jobs"}).status_code == 403
    assert _state(target) is JobState.QUEUED


def test_staff_without_a_conveyor_permission_is_refused(jobs: Jobs) -> None:
    client = _client(_user())
    assert client.get(JOBS).status_code == 403
    assert client.get(_page(jobs.succeeded)).status_code == 403
    assert f'href="{JOBS}"' not in _text(client.get("/admin/"))


def test_a_non_staff_user_is_sent_to_the_admin_login(jobs: Jobs) -> None:
    target = jobs.queued[2]
    client = _client(_user("view_job", "change_job", staff=False))
    for response in (
        client.get(JOBS),
        client.post(_page(target), {"action": "cancel_jobs"}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/?next=")
    assert _state(target) is JobState.QUEUED


def test_a_post_without_the_csrf_token_is_refused(jobs: Jobs) -> None:
    target = jobs.queued[2]
    client = _client(_user(superuser=True), csrf=True)
    refused = client.post(JOBS, {"action": "cancel_jobs", "_selected_action": [target]})
    assert refused.status_code == 403
    assert _state(target) is JobState.QUEUED


def test_an_unknown_backend_is_not_found(jobs: Jobs) -> None:
    assert _client(_user("view_job")).get(JOBS, {"backend": "nope"}).status_code == 404


def test_each_conveyor_backend_s_store_is_browsed_and_acted_on(
    jobs: Jobs, django_project: dict[str, str]
) -> None:
    from shop.tasks import add

    job_id = add.enqueue(1, 2).id  # the "direct" backend: another SQLite file
    client = _client(_user("view_job", "change_job"))
    html = _text(client.get(JOBS))
    assert "By backend" in html and 'href="?backend=direct"' in html
    assert job_id not in _listed(html)  # not the default store's
    direct = _text(client.get(JOBS, {"backend": "direct", "state": "queued"}))
    assert job_id in _listed(direct)
    assert f'href="{_page(job_id, "?backend=direct")}"' in direct
    client.post(_page(job_id, "?backend=direct"), {"action": "cancel_jobs"})
    assert _state(job_id, "direct") is JobState.CANCELLED


def test_a_postgresql_store_is_browsed_and_acted_on(
    jobs: Jobs, django_project: dict[str, str]
) -> None:
    require_postgres(django_project)
    response = Client().post(
        "/signup-together/", {"username": f"pg-{uuid.uuid4().hex[:8]}", "db": "pg"}
    )
    job_id = response.json()["result_id"]
    client = _client(_user("view_job", "change_job"))
    listed = _listed(_text(client.get(JOBS, {"backend": "together_pg", "state": "queued"})))
    assert job_id in listed
    page = _text(client.get(_page(job_id, "?backend=together_pg")))
    assert "shop.pg_tasks.greet_pg" in page and "postgresql://" in page
    client.post(_page(job_id, "?backend=together_pg"), {"action": "cancel_jobs"})
    assert _state(job_id, "together_pg") is JobState.CANCELLED
    client.post(_page(job_id, "?backend=together_pg"), {"action": "retry_jobs"})
    assert _state(job_id, "together_pg") is JobState.QUEUED


def test_a_project_s_own_action_gets_the_selected_jobs(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.contrib import admin

    from conveyor.contrib.django.admin import Selected
    from conveyor.contrib.django.models import Job

    received: list[Selected] = []

    @admin.action(description="Note the selected jobs", permissions=["view"])
    def note(modeladmin: Any, request: Any, selected: Selected) -> None:
        received.append(selected)

    job_admin = admin.site._registry[Job]
    monkeypatch.setattr(job_admin, "actions", (*job_admin.actions, note))
    client = _client(_user("view_job"))  # the action asks for view only
    html = _text(client.get(JOBS))
    assert '<option value="note">Note the selected jobs</option>' in html
    assert '<option value="cancel_jobs">' not in html  # still needs change_job
    client.post(JOBS, {"action": "note", "_selected_action": [jobs.succeeded, jobs.dead]})
    assert [(s.alias, s.ids) for s in received] == [("default", [jobs.succeeded, jobs.dead])]
    assert 'value="Note the selected jobs"' in _text(client.get(_page(jobs.succeeded)))


def test_a_store_that_cannot_be_opened_is_named_on_the_list_page(jobs: Jobs, tmp_path: Any) -> None:
    from django.conf import settings
    from django.test import override_settings

    (tmp_path / "a-file").write_text("not a directory")
    unusable = f"sqlite:///{tmp_path / 'a-file' / 'jobs.db'}"
    # One more TASKS entry; the others stay as they are (the same OPTIONS: the same Apps)
    broken = {"BACKEND": "conveyor.contrib.django.ConveyorBackend", "OPTIONS": {"url": unusable}}
    with override_settings(TASKS={**settings.TASKS, "broken": broken}):
        response = _client(_user("view_job")).get(JOBS, {"backend": "broken"})
    assert response.status_code == 200
    html = _text(response)
    assert f"The store {unusable} cannot be read:" in html and "a-file" in html
