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

#: Tints and shades the pages' CSS and charts use beside the main colours above.
PALE_BLUE = "#f3f6fb"       # the "Try this" box, a quiet notice
NOTICE = "#fff6d6"          # a notice or warning box ...
NOTICE_LINE = "#e8cf75"     # ... and its border
GOOD = "#eaf5ec"            # a "faster" verdict box ...
GOOD_LINE = "#9cc9a6"       # ... and its border
SHADE = "#f3f4f7"           # inline code, alternate chart bands
OFF_WHITE = "#fcfcfd"       # the background of Episode 4's texts
BIG_PALE = "#f6f3fa"        # a box about a real system (border: BIG)
BIG_LIGHT = "#ece6f5"       # a draft being checked by the big model
ACCEPTED_LIGHT = "#dcefe0"  # background of an accepted token
REJECTED_LIGHT = "#e8a39b"  # second stripe of a rejected swatch
DISCARDED_LIGHT = "#e1e3e8" # second stripe of a discarded swatch
GOLD_LIGHT = "#fbefc4"      # background of the big model's own token in running text
GOLD_TINT = "#f7e7ae"       # background of the big model's own token in Episode 4
GOLD_DARK = "#7a5c00"       # the mark on a gold token (★, +)
GOLD_OUTLINE = "#8a6a00"    # dashed outline of a gold token
BAD_TEXT = "#8c2a1f"        # dark red label on the SLOWER band, 7:1
GOOD_TEXT = "#1f6a34"       # dark green words ("✓ Right"), 6:1 on PALE_BLUE
EMBER = "#b04a00"           # a fourth line colour (Episode 6's +2/−1 policy)
#: Primary buttons: Bokeh's own primary blue gives white text 3.6:1; this one gives 6.4:1 (WCAG AA).
BUTTON = "#2c5f9e"
BUTTON_HOVER = "#244f84"

#: Every colour the pages' CSS uses, as a custom property ``--sdp-<name>`` (see :func:`css_variables`).
CSS_COLOURS = {
    "ink": INK, "muted": MUTED, "paper": PAPER, "grid": GRID,
    "draft": DRAFT, "big": BIG, "accepted": ACCEPTED, "gold": GOLD, "rejected": REJECTED,
    "discarded": DISCARDED, "slower": SLOWER,
    "pale-blue": PALE_BLUE, "notice": NOTICE, "notice-line": NOTICE_LINE, "good": GOOD,
    "good-line": GOOD_LINE, "shade": SHADE, "off-white": OFF_WHITE, "big-pale": BIG_PALE,
    "big-light": BIG_LIGHT, "accepted-light": ACCEPTED_LIGHT, "rejected-light": REJECTED_LIGHT,
    "discarded-light": DISCARDED_LIGHT, "gold-light": GOLD_LIGHT, "gold-tint": GOLD_TINT,
    "gold-dark": GOLD_DARK, "gold-outline": GOLD_OUTLINE, "bad-text": BAD_TEXT,
    "good-text": GOOD_TEXT, "ember": EMBER,
    "button": BUTTON, "button-hover": BUTTON_HOVER,
}

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"
MONO_FONT = "'DejaVu Sans Mono', Menlo, Consolas, monospace"


#: A chart's toolbar buttons as 32 x 32 px tap targets (Bokeh draws 30 px); a rule of the toolbar's
#: own sheet sizes each button's box (``kit/figures.anchor_figures`` adds it to every figure).
TOOLBAR_CSS = ".bk-ToolButton, .bk-OnOffButton, .bk-ClickButton { width: 32px; height: 32px; }"


def css_variables(selector: str = ":host", names=None) -> str:
    """The theme as CSS custom properties on ``selector``: ``--sdp-ink: #1f2430;`` and so on.

    Every stylesheet in ``kit/static/`` names its colours and fonts through these, so
    this module stays the one place a colour is written down. ``names`` (without the
    ``--sdp-`` prefix) limits the properties to those a stylesheet uses.
    """
    values = {**CSS_COLOURS, "font": FONT, "mono": MONO_FONT}
    props = [f"--sdp-{name}: {value};" for name, value in values.items()
             if names is None or name in names]
    return f"{selector} {{ {' '.join(props)} }}\n" if props else ""


def lean(fig) -> None:
    """Drop the glyph copies a figure never shows, so every session sends fewer models.

    ``figure.line(...)`` and its siblings give each renderer two extra glyph models: one
    for the unselected points while a selection is active and one for a legend-muted
    renderer. No chart here selects points (hover inspects) or mutes from its legend
    (legends hide), so BokehJS may derive both when needed ("auto"): the same drawing, two
    models fewer per renderer to build, walk and serialize. Call it once a figure's
    renderers are added (:func:`style_figure` does).
    """
    for r in fig.renderers:
        if hasattr(r, "nonselection_glyph"):
            r.nonselection_glyph = "auto"
            r.muted_glyph = "auto"


def style_figure(fig, *, tick_color: str = MUTED) -> None:
    """The project's chart look: quiet axes, light grid, no outline, no Bokeh logo; and
    :func:`lean`."""
    lean(fig)
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.axis_label_text_color = MUTED
        ax.major_label_text_color = tick_color
        ax.axis_label_text_font_style = "normal"
    fig.outline_line_color = None
    fig.grid.grid_line_color = GRID
    fig.toolbar.logo = None
