from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest, JsonResponse

from shop.tasks import greet, send_welcome


class Refused(Exception):
    pass


def signup(request: HttpRequest) -> JsonResponse:
    """Create a user and enqueue its welcome mail in one transaction; ``refuse=1`` rolls
    the transaction back after the enqueue."""
    try:
        with transaction.atomic():
            user = User.objects.create(username=request.POST["username"])
            result = send_welcome.enqueue(user.pk)
            if request.POST.get("refuse"):
                raise Refused
    except Refused:
        return JsonResponse({"result_id": result.id, "committed": False}, status=409)
    return JsonResponse({"result_id": result.id, "committed": True, "user_id": user.pk})


def signup_together(request: HttpRequest) -> JsonResponse:
    """As :func:`signup` on the database ``db`` (default: "default"), enqueuing ``greet``
    on the backend whose store is that database: the job is written in the view's
    transaction, not after it."""
    database = request.POST.get("db", "default")
    task = greet
    if database == "pg":
        from shop.pg_tasks import greet_pg as task
    try:
        with transaction.atomic(using=database):
            user = User.objects.db_manager(database).create(username=request.POST["username"])
            result = task.enqueue(user.pk, database)
            if request.POST.get("refuse"):
                raise Refused
    except Refused:
        return JsonResponse({"result_id": result.id, "committed": False}, status=409)
    return JsonResponse({"result_id": result.id, "committed": True, "user_id": user.pk})
