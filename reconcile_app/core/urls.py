"""Core URLs."""
from django.urls import path

from . import views

app_name = "core"
urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("audit/", views.audit_list, name="audit_list"),
]
