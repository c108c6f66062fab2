"""Template helpers for patient pages: age from a birth date."""
from __future__ import annotations

from datetime import date

from django import template

register = template.Library()


@register.filter
def age_years(birth: date | None) -> int | str:
    if not birth:
        return ""
    today = date.today()
    return today.year - birth.year - ((today.month, today.day) < (birth.month, birth.day))
