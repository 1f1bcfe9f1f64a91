"""Line charts as small, deterministic SVG files, for the README's figures: the same numbers give
the same bytes (no plotting library, no browser), so a test can check that a committed figure is
what ``python -m hierattn report`` draws from the recorded results."""
from __future__ import annotations

from collections.abc import Sequence
from html import escape

# Colour-blind-safe (Okabe-Ito), in the order series are given.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
WIDTH, HEIGHT = 720, 330
LEFT, RIGHT, TOP, BOTTOM = 56, 250, 34, 46


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    span = high - low or 1.0
    raw = span / count
    step = min((s * 10 ** e for e in range(-3, 6) for s in (1, 2, 2.5, 5)), key=lambda s: abs(s - raw))
    first = (low // step + (low % step > 1e-9)) * step
    out, value = [], first
    while value <= high + 1e-9:
        out.append(round(value, 6))
        value += step
    return out


def _number(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1 or value == 0 else f"{value:.2g}"


def line_chart(series: dict[str, tuple[Sequence[float], Sequence[float | None]]], title: str, x_title: str,
               y_title: str, dashed: Sequence[str] = ()) -> str:
    """``series``: name -> (x values, y values; None leaves a gap). Returns the SVG text."""
    points = [(x, y) for xs, ys in series.values() for x, y in zip(xs, ys) if y is not None]
    if not points:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="60"><text x="10" y="35" '
                f'font-family="sans-serif" font-size="13">{escape(title)}: nothing recorded yet</text></svg>\n')
    x_low, x_high = min(p[0] for p in points), max(p[0] for p in points)
    y_low, y_high = min(p[1] for p in points), max(p[1] for p in points)
    pad = (y_high - y_low) * 0.08 or 0.01
    y_low, y_high = y_low - pad, y_high + pad
    x_span, y_span = (x_high - x_low) or 1.0, (y_high - y_low) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return round(LEFT + (x - x_low) / x_span * plot_w, 1)

    def py(y: float) -> float:
        return round(TOP + (1 - (y - y_low) / y_span) * plot_h, 1)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{escape(title)}</text>']
    for y in _ticks(y_low, y_high):
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{py(y)}" y2="{py(y)}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(y) + 4}" text-anchor="end">{_number(y)}</text>')
    for x in _ticks(x_low, x_high):
        out.append(f'<text x="{px(x)}" y="{TOP + plot_h + 16}" text-anchor="middle">{_number(x)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">{escape(x_title)}</text>')
    out.append(f'<text transform="translate(14 {TOP + plot_h / 2}) rotate(-90)" text-anchor="middle">'
               f'{escape(y_title)}</text>')
    for i, (name, (xs, ys)) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="5 3"' if name in dashed else ""
        runs, current = [], []
        for x, y in zip(xs, ys):
            if y is None:
                runs, current = runs + [current] if current else runs, []
            else:
                current.append(f"{px(x)},{py(y)}")
        runs += [current] if current else []
        for run in runs:
            out.append(f'<polyline points="{" ".join(run)}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for x, y in zip(xs, ys):
            if y is not None:
                out.append(f'<circle cx="{px(x)}" cy="{py(y)}" r="3" fill="{colour}"/>')
        legend_y = TOP + 8 + 18 * i
        out.append(f'<line x1="{LEFT + plot_w + 12}" x2="{LEFT + plot_w + 34}" y1="{legend_y}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{LEFT + plot_w + 40}" y="{legend_y + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
