"""Colours, fonts and shared styling.

Token colours follow the series' convention (green = drafted and accepted, gold =
written by the big model) and are never the only cue: every status also has a
label, an outline or a hatch pattern (see :data:`STATUS`).
"""

from __future__ import annotations

INK = "#1f2430"
MUTED = "#5a6172"  # 6.3:1 on white
PAPER = "#ffffff"
GRID = "#e6e8ee"

DRAFT = "#3b6fb6"      # the small, fast draft model
BIG = "#6a4c93"        # the big, slow model
ACCEPTED = "#2e8540"   # drafted and accepted
GOLD = "#c99a06"       # written by the big model (correction, bonus)
REJECTED = "#c0392b"   # the first miss
DISCARDED = "#a9afbb"  # drafted after the miss, thrown away
SLOWER = "#fbe3e1"     # region where speculation loses

#: How each status is drawn: fill colour, hatch pattern, short label for legends.
STATUS = {
    "generate": dict(fill=BIG, hatch=" ", mark="", label="big-model pass"),
    "score": dict(fill=BIG, hatch=" ", mark="", label="position scored"),
    "verify": dict(fill=BIG, hatch=" ", mark="", label="verify pass"),
    "draft": dict(fill=DRAFT, hatch=" ", mark="", label="draft step"),
    "accepted": dict(fill=ACCEPTED, hatch=" ", mark="✓", label="accepted"),
    "rejected": dict(fill=REJECTED, hatch="x", mark="✗", label="rejected"),
    "discarded": dict(fill=DISCARDED, hatch="/", mark="–", label="discarded"),
    "correction": dict(fill=GOLD, hatch="o", mark="★", label="big model's own token"),
    "bonus": dict(fill=GOLD, hatch="o", mark="+", label="bonus token"),
}

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"

#: CSS for the page shell; injected as a stylesheet on the page's root column.
PAGE_CSS = f"""
:host {{ font-family: {FONT}; color: {INK}; }}
.sdp-kicker {{ color: {MUTED}; font-size: 0.85rem; letter-spacing: 0.06em; text-transform: uppercase; margin: 0; }}
.sdp-title {{ font-size: 1.9rem; line-height: 1.2; margin: 0.1em 0 0.3em 0; }}
.sdp-lede {{ font-size: 1.08rem; line-height: 1.5; max-width: 46em; margin: 0 0 0.4em 0; }}
.sdp-try {{ background: #f3f6fb; border-left: 4px solid {DRAFT}; padding: 0.5em 0.9em; border-radius: 4px;
           max-width: 46em; margin: 0.4em 0 0.8em 0; }}
.sdp-nav a {{ color: {DRAFT}; text-decoration: none; font-weight: 600; margin-right: 1.5em; }}
.sdp-nav a:hover, .sdp-nav a:focus {{ text-decoration: underline; }}
.sdp-stat {{ display: inline-block; margin: 0 1.6em 0.4em 0; vertical-align: top; }}
.sdp-stat .v {{ font-size: 1.6rem; font-weight: 700; font-variant-numeric: tabular-nums; }}
.sdp-stat .l {{ font-size: 0.85rem; color: {MUTED}; }}
.sdp-note {{ color: {MUTED}; font-size: 0.92rem; line-height: 1.45; max-width: 50em; }}
.sdp-notice {{ background: #fff6d6; border: 1px solid #e8cf75; padding: 0.4em 0.8em; border-radius: 4px; }}
"""


def style_figure(fig, *, tick_color: str = MUTED) -> None:
    """The project's chart look: quiet axes, light grid, no outline, no Bokeh logo."""
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.axis_label_text_color = MUTED
        ax.major_label_text_color = tick_color
        ax.axis_label_text_font_style = "normal"
    fig.outline_line_color = None
    fig.grid.grid_line_color = GRID
    fig.toolbar.logo = None
