"""Core URLs."""
from django.urls import path

from . import views, views_preferences

app_name = "core"
urlpatterns = [
    path("", views.home, name="home"),
    path("login/", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("audit/", views.audit_list, name="audit_list"),
    path("preferences/", views_preferences.preferences, name="preferences"),
    path("preferences/timezone/detect/", views_preferences.timezone_detect, name="timezone_detect"),
]
