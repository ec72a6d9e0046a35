from django.urls import path
from shop import views

urlpatterns = [
    path("signup/", views.signup),
    path("signup-together/", views.signup_together),
]
