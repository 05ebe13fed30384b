"""Where a chart's text labels go, so that none is cut by the plot's edge or hides another.

Plain geometry, no Bokeh: a :class:`Frame` is a figure's plotting area (its data
ranges and its size on screen), a :class:`Tag` is one label as a Bokeh ``text``
glyph draws it (anchor in data units, alignment, baseline and pixel offsets), and
:func:`box` is the rectangle it covers, in pixels from the frame's bottom-left corner.

A page does not know how wide a visitor's screen is, so the views lay their labels
out for the *narrowest* frame the page can give a figure (``min_width``, the frame
on a 390 px phone): horizontal gaps only grow on a wider screen, so a layout that
fits the narrowest frame fits every wider one. :func:`place` picks, label by label
in order of importance, the first candidate position that stays inside the frame
and clear of every label placed before it; :func:`axis_end_for` stretches an axis so
that labels drawn beyond the ends of bars fit; :func:`spread` stacks labels that
would collide along one axis (curve names at the end of their curves). Lines the chart
draws (curves, a marker line) can be passed to :func:`place` too: a label is then put
only where no line runs through it.

The browser tests check the same promises on the labels as BokehJS actually drew them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

#: Width of one label character, in units of the font size: generous for the bold
#: sans-serif Bokeh draws (measured labels on Debian Chromium are narrower).
CHAR_EM = 0.62
#: Height of a line of label text, in units of the font size.
LINE_EM = 1.25
#: Labels keep at least this many pixels from each other and from the frame's edge.
GAP_PX = 2.0


def text_width(text: str, size_px: float) -> float:
    """Estimated width of ``text`` at ``size_px`` (pixels): its longest line's."""
    return CHAR_EM * size_px * max(len(line) for line in text.split("\n"))


@dataclass(frozen=True)
class Frame:
    """A figure's plotting area: data ranges and size on screen (pixels)."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: float
    height: float

    def sx(self, x: float) -> float:
        """Pixels from the frame's left edge to data ``x``."""
        return (x - self.x0) / (self.x1 - self.x0) * self.width

    def sy(self, y: float) -> float:
        """Pixels from the frame's bottom edge up to data ``y``."""
        return (y - self.y0) / (self.y1 - self.y0) * self.height

    def dx(self, px: float) -> float:
        """``px`` pixels as a distance along x, in data units."""
        return px / self.width * (self.x1 - self.x0)

    def dy(self, px: float) -> float:
        """``px`` pixels as a distance along y, in data units."""
        return px / self.height * (self.y1 - self.y0)


@dataclass(frozen=True)
class Box:
    """A rectangle in pixels from the frame's bottom-left corner (y up)."""

    left: float
    bottom: float
    right: float
    top: float

    def meets(self, other: Box, gap: float = GAP_PX) -> bool:
        """Whether the two boxes overlap or come closer than ``gap``."""
        return (self.left < other.right + gap and other.left < self.right + gap
                and self.bottom < other.top + gap and other.bottom < self.top + gap)

    def inside(self, frame: Frame, gap: float = GAP_PX) -> bool:
        return (self.left >= gap and self.bottom >= gap and self.right <= frame.width - gap
                and self.top <= frame.height - gap)

    def crossed_by(self, line: np.ndarray, gap: float = GAP_PX) -> bool:
        """Whether the polyline ``line`` (an ``(n, 2)`` array of pixel points, y up) runs
        through the box or closer to it than ``gap`` (each segment clipped to the box,
        Liang-Barsky)."""
        pts = np.asarray(line, dtype=float)
        if len(pts) < 2:
            return False
        x0, y0 = pts[:-1, 0], pts[:-1, 1]
        dx, dy = np.diff(pts[:, 0]), np.diff(pts[:, 1])
        t0, t1 = np.zeros_like(x0), np.ones_like(x0)
        ok = np.isfinite(x0 + y0 + dx + dy)
        edges = ((-dx, x0 - (self.left - gap)), (dx, self.right + gap - x0),
                 (-dy, y0 - (self.bottom - gap)), (dy, self.top + gap - y0))
        for p, q in edges:
            flat = p == 0
            ok &= ~(flat & (q < 0))
            r = np.divide(q, p, out=np.zeros_like(q), where=~flat)
            t0 = np.where(p < 0, np.maximum(t0, r), t0)
            t1 = np.where(p > 0, np.minimum(t1, r), t1)
        return bool(np.any(ok & (t0 <= t1)))


@dataclass(frozen=True)
class Tag:
    """One label as a Bokeh ``text`` glyph draws it.

    ``align`` is ``"left"``, ``"center"`` or ``"right"``; ``baseline`` ``"top"``,
    ``"middle"`` or ``"bottom"``; ``dx`` and ``dy`` are Bokeh's ``x_offset`` and
    ``y_offset`` in pixels (``dy`` > 0 moves the label *down*, as in Bokeh).
    """

    x: float
    y: float
    text: str
    size: float = 12.0
    align: str = "left"
    baseline: str = "middle"
    dx: float = 0.0
    dy: float = 0.0

    def moved(self, **changes) -> Tag:
        return replace(self, **changes)


def box(tag: Tag, frame: Frame) -> Box:
    """The rectangle ``tag`` covers in ``frame`` (pixels, y up); a text of several lines
    (``"\\n"``) is as tall as its lines."""
    w, h = text_width(tag.text, tag.size), LINE_EM * tag.size * (tag.text.count("\n") + 1)
    x = frame.sx(tag.x) + tag.dx
    y = frame.sy(tag.y) - tag.dy
    left = {"left": x, "center": x - w / 2, "right": x - w}[tag.align]
    bottom = {"bottom": y, "middle": y - h / 2, "top": y - h}[tag.baseline]
    return Box(left, bottom, left + w, bottom + h)


def slid_inside(tag: Tag, frame: Frame) -> Tag:
    """``tag`` moved sideways (through its ``dx``) as little as keeps it inside the frame's width."""
    b = box(tag, frame)
    if b.left < GAP_PX:
        return tag.moved(dx=tag.dx + GAP_PX - b.left)
    if b.right > frame.width - GAP_PX:
        return tag.moved(dx=tag.dx - (b.right - frame.width + GAP_PX))
    return tag


def fits(tag: Tag, frame: Frame, taken: Iterable[Box] = (), lines: Sequence[np.ndarray] = ()) -> bool:
    """Whether ``tag`` lies inside ``frame``, clear of every box in ``taken`` and of every
    polyline in ``lines`` (pixel points, y up)."""
    b = box(tag, frame)
    return (b.inside(frame) and not any(b.meets(t) for t in taken)
            and not any(b.crossed_by(ln) for ln in lines))


def place(choices: Sequence[Sequence[Tag]], frame: Frame, *, taken: Iterable[Box] = (),
          required: Sequence[bool] | None = None,
          lines: Sequence[Sequence[np.ndarray]] | None = None) -> list[Tag | None]:
    """Lay labels out in order: each gets its first candidate that fits, or ``None`` (not drawn).

    ``choices[i]`` are label ``i``'s candidate positions, best first; ``taken`` are boxes
    already occupied (fixed labels, marks); ``lines[i]`` are the lines the chart draws that
    label ``i`` must keep clear of (polylines in pixels, y up). A ``required`` label that fits
    nowhere still gets its first candidate clear of the boxes (else one inside the frame, else
    its first), so it is always drawn; it is placed before the others.
    """
    required = list(required or [False] * len(choices))
    occupied = list(taken)
    out: list[Tag | None] = [None] * len(choices)
    order = sorted(range(len(choices)), key=lambda i: not required[i])
    for i in order:
        avoid = lines[i] if lines is not None else ()
        hit = next((t for t in choices[i] if fits(t, frame, occupied, avoid)), None)
        if hit is None and required[i] and avoid:  # a required label: clear of lines if it can be
            hit = next((t for t in choices[i] if fits(t, frame, occupied)), None)
        if hit is None and required[i] and choices[i]:
            hit = next((t for t in choices[i] if box(t, frame).inside(frame)), choices[i][0])
        if hit is not None:
            out[i] = hit
            occupied.append(box(hit, frame))
    return out


def axis_end_for(ends: Sequence[float], widths_px: Sequence[float], frame_px: float, *,
                 start: float = 0.0, pad_px: float = 0.0, at_least: float = 0.0) -> float:
    """The smallest axis end that leaves room for a label of ``widths_px`` beyond each of ``ends``.

    A label starting ``pad_px`` right of ``end`` (an axis from ``start``) fits a frame
    ``frame_px`` wide when ``(end - start) / (E - start) * frame_px + pad_px + width`` is at most
    ``frame_px - GAP_PX``; the answer is the largest such ``E`` needed, and at least ``at_least``.

    Examples
    --------
    >>> axis_end_for([100.0], [50.0], 300.0, pad_px=8.0)  # 300 px frame, 60 px needed past 100
    125.0
    """
    room = frame_px - GAP_PX
    need = [start + (e - start) * frame_px / (room - pad_px - w)
            for e, w in zip(ends, widths_px) if room - pad_px - w > 0]
    return float(max([at_least, *need]))


def spread(ys: Sequence[float], size_px: float, lo: float, hi: float) -> np.ndarray:
    """Positions for labels wanted at ``ys`` (pixels along one axis), at least ``size_px`` apart.

    Each label keeps its order and moves as little as the stack needs: neighbours that
    are too close push apart, and a stack that would leave ``[lo, hi]`` slides back in.
    If the labels cannot all fit, they are spaced evenly from ``lo`` to ``hi`` (the
    caller should then show fewer).

    Examples
    --------
    >>> spread([10.0, 11.0, 50.0], 8.0, 0.0, 100.0).tolist()
    [6.5, 14.5, 50.0]
    """
    ys = np.asarray(ys, dtype=float)
    n = ys.size
    out = np.empty(n)
    if n == 0:
        return out
    order = np.argsort(ys, kind="stable")
    want = ys[order]
    if (n - 1) * size_px > hi - lo:
        out[order] = np.linspace(lo, hi, n) if n > 1 else (lo + hi) / 2
        return out
    # Pool adjacent violators: clusters of labels that must touch sit centred on their wishes.
    starts = want - size_px * np.arange(n)  # position of each label's cluster's first label
    blocks: list[list] = []  # [first index, count, mean start]
    for i in range(n):
        blocks.append([i, 1, starts[i]])
        while len(blocks) > 1 and blocks[-2][2] > blocks[-1][2]:
            i2, n2, m2 = blocks.pop()
            i1, n1, m1 = blocks.pop()
            blocks.append([i1, n1 + n2, (m1 * n1 + m2 * n2) / (n1 + n2)])
    placed = np.empty(n)
    for i0, cnt, m in blocks:
        placed[i0:i0 + cnt] = m + size_px * np.arange(i0, i0 + cnt)
    # Slide the whole stack into [lo, hi] where it sticks out (pushing neighbours as needed).
    for i in range(n):
        placed[i] = max(placed[i], lo + size_px * i)
    for i in range(n - 1, -1, -1):
        placed[i] = min(placed[i], hi - size_px * (n - 1 - i))
    out[order] = placed
    return out


def overlapping(boxes: Sequence[Box]) -> list[tuple[int, int]]:
    """Pairs of boxes that meet (for tests)."""
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].meets(boxes[j], gap=0.0)]
