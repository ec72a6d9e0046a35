from django.contrib import admin
from django.urls import path
from shop import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("signup/", views.signup),
    path("signup-together/", views.signup_together),
]
