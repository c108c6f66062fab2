"""Query parameters of the context pack: the format, and the token budget of the text rendering."""
from __future__ import annotations

from typing import Any

from django import forms

DEFAULT_TEXT_BUDGET = 2000
MAX_TEXT_BUDGET = 200_000


class ContextPackForm(forms.Form):
    format = forms.ChoiceField(choices=[("json", "JSON"), ("text", "Plain text for a prompt")], required=False)
    budget = forms.IntegerField(required=False, min_value=1, max_value=MAX_TEXT_BUDGET,
                                help_text="Tokens the text rendering may take (format=text only).")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["format"] = data.get("format") or "json"
        if data.get("budget") is not None and data["format"] != "text":
            self.add_error("budget", "budget applies to format=text only")
        if data["format"] == "text" and data.get("budget") is None:
            data["budget"] = DEFAULT_TEXT_BUDGET
        return data
