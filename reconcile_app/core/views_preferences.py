"""The user's display preferences: the time zone, detected from the browser or chosen."""
from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from .forms import TimezoneDetectForm, TimezonePreferenceForm
from .middleware import TZ_SESSION_KEY
from .models import UserPreference
from .services import user_time_zone_set


def _remember(request: HttpRequest, pref: UserPreference) -> None:
    request.session[TZ_SESSION_KEY] = {"name": pref.time_zone, "source": pref.time_zone_source}


@require_POST
def timezone_detect(request: HttpRequest) -> JsonResponse:
    """Posted once by static/js/timezone.js when the browser's zone differs from the page's."""
    form = TimezoneDetectForm(request.POST)
    if not form.is_valid():
        return JsonResponse({"changed": False, "error": "unknown time zone"}, status=400)
    before = getattr(request, "tz_name", "")
    pref = user_time_zone_set(user=request.user, name=form.cleaned_data["tz"], source=UserPreference.ZoneSource.BROWSER)
    _remember(request, pref)
    return JsonResponse({"changed": pref.time_zone != before, "tz": pref.time_zone})


@require_http_methods(["GET", "POST"])
def preferences(request: HttpRequest) -> HttpResponse:
    pref = UserPreference.objects.filter(user=request.user).first()
    chosen = pref.time_zone if pref and pref.time_zone_source == UserPreference.ZoneSource.USER else ""
    form = TimezonePreferenceForm(request.POST or None, initial={"time_zone": chosen})
    if request.method == "POST" and form.is_valid():
        pref = user_time_zone_set(user=request.user, name=form.cleaned_data["time_zone"], source=UserPreference.ZoneSource.USER)
        _remember(request, pref)
        messages.success(request, f"Times now show in {pref.time_zone}." if pref.time_zone
                         else "Times follow this browser's time zone again.")
        back = request.POST.get("next", "")
        if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
            return redirect(back)
        return redirect("core:preferences")
    return render(request, "core/preferences.html",
                  {"form": form, "pref": pref, "next": request.GET.get("next", ""), "now": timezone.now()})
