"""`when`: a time in the viewer's zone with the zone shown ("2026-01-05 10:04 EST"), as <time> or text."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from reconcile_app.core.timezones import local_text, offset_text

register = template.Library()


def _local(value: object) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return timezone.localtime(value) if timezone.is_aware(value) else value


@register.filter
def when(value: object, arg: str = "") -> SafeString | str:
    """<time datetime="…UTC…" title="America/New_York, UTC−05:00">2026-01-05 10:04 EST</time>; "seconds" adds seconds."""
    local = _local(value)
    if local is None:
        return ""
    utc = local.astimezone(dt_timezone.utc).isoformat() if timezone.is_aware(local) else local.isoformat()
    title = f"{timezone.get_current_timezone_name()}, {offset_text(local.utcoffset())}"
    return format_html('<time datetime="{}" title="{}">{}</time>', utc, title, local_text(local, seconds=arg == "seconds"))


@register.filter
def when_text(value: object) -> str:
    """The same words without markup, for attributes and plain text."""
    local = _local(value)
    return local_text(local) if local is not None else ""
