"""Charts drawn on the server as inline SVG: no script, no CDN, no build step, allowed by the pages' CSP (no
inline styles: presentation attributes only). Each chart names itself (<title>, <desc>, aria-labelledby); the
page puts the same numbers in a table beside it for screen readers and for copying."""

from __future__ import annotations

from markupsafe import Markup, escape

WIDTH, HEIGHT, TOP, BOTTOM, LEFT = 720, 220, 16, 36, 48  # px; the viewBox scales to the card's width
MAX_BARS = 90  # the latest days on a page; the JSON endpoint has every day
MAX_BAR = 40  # px, the widest bar


def bar_chart(points: list[tuple[str, int]], *, ident: str, title: str, unit: str) -> Markup:
    """Bars for (label, value) points, oldest first (the latest MAX_BARS)."""
    points = points[-MAX_BARS:]
    top = max((value for _label, value in points), default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - TOP - BOTTOM
    step = min(plot_w / max(len(points), 1), MAX_BAR)  # a few days: narrow bars, not one wide block
    gap = 2 if step > 6 else 0
    total = sum(value for _label, value in points)
    span = f"{points[0][0]} to {points[-1][0]}" if points else "no days"
    desc = f"{len(points)} day(s), {span}; {total} {unit} in all, at most {top if total else 0} on one day."
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" width="100%" '
             f'aria-labelledby="{ident}-title {ident}-desc" xmlns="http://www.w3.org/2000/svg">',
             f'<title id="{ident}-title">{escape(title)}</title><desc id="{ident}-desc">{escape(desc)}</desc>',
             f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 8}" y2="{TOP + plot_h}" stroke="currentColor"/>',
             f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end" font-size="12" fill="currentColor">{top}</text>',
             f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end" font-size="12" fill="currentColor">0</text>']
    for n, (label, value) in enumerate(points):
        h = plot_h * value / top
        parts.append(f'<rect class="bar" x="{LEFT + n * step + gap / 2:.1f}" y="{TOP + plot_h - h:.1f}" '
                     f'width="{max(step - gap, 1):.1f}" height="{h:.1f}" fill="#2a6f97" data-label="{escape(label)}" '
                     f'data-value="{value}"><title>{escape(label)}: {value} {escape(unit)}</title></rect>')
    if points:  # the first and last days under the axis; as one label when the bars are too few to part them
        base, end = TOP + plot_h + 18, LEFT + len(points) * step
        first = points[0][0] if end - LEFT >= 160 or len(points) == 1 else f"{points[0][0]} to {points[-1][0]}"
        parts.append(f'<text x="{LEFT}" y="{base}" font-size="12" fill="currentColor">{escape(first)}</text>')
        if end - LEFT >= 160 and len(points) > 1:
            parts.append(f'<text x="{end:.1f}" y="{base}" text-anchor="end" font-size="12" fill="currentColor">'
                         f'{escape(points[-1][0])}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
