"""URLs for smart: the launch endpoints are public (the namespace is), the registration pages admin-only."""
from django.urls import path

from . import views

app_name = "smart"
urlpatterns = [
    path("launch", views.launch, name="launch"),
    path("standalone/", views.standalone, name="standalone"),
    path("callback", views.callback, name="callback"),
    path("launch-again/", views.launch_again, name="launch_again"),
    path("jwks", views.jwks, name="jwks"),
    path("backchannel-logout", views.backchannel_logout, name="backchannel_logout"),
    path("registrations/", views.registration_list_view, name="registration_list"),
    path("registrations/new/", views.registration_edit, name="registration_create"),
    path("registrations/<int:pk>/", views.registration_edit, name="registration_edit"),
    path("registrations/<int:pk>/discover/", views.registration_discover, name="registration_discover"),
    path("registrations/<int:pk>/keygen/", views.registration_keygen, name="registration_keygen"),
]
