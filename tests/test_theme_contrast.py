"""Chart text that axe-core cannot see (it is drawn on a canvas) meets WCAG AA contrast."""

from __future__ import annotations

import pytest

from specdec_playable.kit import theme
from specdec_playable.kit.lanes import label_color

AA = 4.5  # WCAG 2 AA, normal-size text


def _luminance(color: str) -> float:
    named = {"white": "#ffffff", "black": "#000000"}
    h = named.get(color, color).lstrip("#")
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_formula_matches_known_values():
    assert contrast("white", "black") == pytest.approx(21.0)
    assert contrast("#777777", "white") == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("status", sorted(theme.STATUS))
def test_box_labels_are_readable_on_their_fill(status):
    fill = theme.STATUS[status]["fill"]
    assert contrast(label_color(status), fill) >= AA


@pytest.mark.parametrize("color", [theme.INK, theme.MUTED, theme.DRAFT, theme.BIG, theme.ACCEPTED,
                                   theme.REJECTED])
def test_chart_text_colours_are_readable_on_paper(color):
    assert contrast(color, theme.PAPER) >= AA
