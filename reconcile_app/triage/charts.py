"""Pure geometry for the dashboard's server-rendered SVG charts (no JavaScript, no inline styles)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: str  # becomes a CSS class: colours live in the stylesheet (the CSP forbids inline style)
    label: str
    value: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: tuple[Bar, ...]
    x_labels: tuple[tuple[float, str], ...]
    max_value: float
    title: str


def stacked_bars(*, title: str, groups: Sequence[str], series: dict[str, Sequence[float]], width: int = 480,
                 height: int = 200, bottom: int = 28) -> Chart:
    """One column per group, series stacked bottom-up in dict order."""
    n = max(len(groups), 1)
    totals = [sum(values[i] for values in series.values()) for i in range(len(groups))]
    top = max(totals, default=0) or 1
    plot_h = height - bottom - 8
    slot = width / n
    bar_w = slot * 0.6
    bars: list[Bar] = []
    for i, group in enumerate(groups):
        x = i * slot + (slot - bar_w) / 2
        y_base = height - bottom
        for name, values in series.items():
            value = values[i]
            if value <= 0:
                continue
            h = plot_h * value / top
            y_base -= h
            bars.append(Bar(x=round(x, 1), y=round(y_base, 1), width=round(bar_w, 1), height=round(h, 1), series=name, label=group, value=value))
    labels = tuple((round(i * slot + slot / 2, 1), g) for i, g in enumerate(groups))
    return Chart(width=width, height=height, bars=tuple(bars), x_labels=labels, max_value=top, title=title)


def ratio_bars(*, title: str, rows: Sequence[tuple[str, float | None]], width: int = 480, row_h: int = 24) -> Chart:
    """Horizontal bars for ratios in [0, 1] (precision per category); None draws nothing."""
    label_w = 120
    plot_w = width - label_w - 50
    bars = []
    for i, (label, ratio) in enumerate(rows):
        if ratio is None:
            continue
        bars.append(Bar(x=label_w, y=i * row_h + 4, width=round(plot_w * ratio, 1), height=row_h - 8, series="ratio", label=label, value=ratio))
    labels = tuple((i * row_h + row_h / 2 + 4, label) for i, (label, _) in enumerate(rows))
    return Chart(width=width, height=max(len(rows), 1) * row_h + 4, bars=tuple(bars), x_labels=labels, max_value=1.0, title=title)
