"""Time zones as plain helpers: validating IANA names and showing a time with its zone."""
from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta
from functools import lru_cache

MINUS = "\u2212"


@lru_cache(maxsize=1)
def zone_names() -> tuple[str, ...]:
    """Every IANA zone this machine knows (tzdata), sorted; legacy aliases left out of the picker."""
    names = sorted(z for z in zoneinfo.available_timezones() if "/" in z and not z.startswith(("Etc/", "SystemV/")))
    return (*names, "UTC")


def zone_get(name: str) -> zoneinfo.ZoneInfo | None:
    """The zone for a valid IANA name, else None (never raises on user input)."""
    if not name or len(name) > 64 or name not in zoneinfo.available_timezones():
        return None
    return zoneinfo.ZoneInfo(name)


def offset_text(offset: timedelta | None) -> str:
    """"UTC−05:00", "UTC+05:30", "UTC"."""
    if not offset:
        return "UTC"
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else MINUS
    hours, mins = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours:02d}:{mins:02d}"


def zone_abbreviation(local: datetime) -> str:
    """The zone as people read it: "EST", "CET"; the UTC offset where the zone has no letters ("-03")."""
    name = local.tzname() or ""
    return name if name.isalpha() and name != "UTC" else offset_text(local.utcoffset())


def local_text(local: datetime, *, seconds: bool = False) -> str:
    """"2026-01-05 10:04 EST": an aware local time with its zone, so it is never read as another zone's."""
    return local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M") + " " + zone_abbreviation(local)
