from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest, JsonResponse

from shop.tasks import send_welcome


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
