"""What a lane player shows, as plain records: lanes, boxes and a timeline (no Bokeh here).

An episode describes a run as a :class:`Timeline` of :class:`Box` records; the
player turns it into the columns of its Bokeh sources with :func:`bar_columns` and
:func:`clock_columns` and plays it in the browser. A box can change while the
clock runs: it may appear later than it starts (``shown``), switch from one
status to another when it is judged (``judged``, ``status_before``) and show its
label from a given time (``label_at``).

The numbers here that the browser uses too (:data:`FLIP_AT`) are
handed to ``lanes.js`` through the player's arguments, so each is written down once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import theme
from ..labels import CHAR_EM

#: A clock or cursor label flips to the left of its mark past this fraction of the axis
#: (so it is not clipped at the right edge).
FLIP_AT = 0.78
#: Until the browser measures the plot, labels are fitted to a plot this wide (px).
ASSUMED_PLOT_PX = 700.0
#: Statuses whose label is dark (their fill is light or gold); others get white labels.
_DARK_LABEL = ("discarded", "correction", "bonus")
#: Statuses drawn with a dark outline; others get a white one.
_DARK_LINE = ("rejected", "correction", "bonus")


@dataclass(frozen=True)
class Lane:
    """A named lane at height ``y``; its clock stops at the lane's last box."""

    key: str
    title: str
    y: float
    color: str = theme.INK
    clock_dy: float = 0.42
    title_dy: float = 0.3


@dataclass(frozen=True)
class Box:
    """One box on a lane, from ``start`` to ``end`` (ms), at height ``y``.

    ``status`` keys the player's styles (:data:`theme.STATUS` and the player's own).
    Before ``judged`` (ms) the box is drawn as ``status_before`` with ``label_before``
    and ``tip_before``; it appears at ``shown`` and its label at ``label_at``.
    Left unset, ``shown`` and ``judged`` are the box's start, ``label_at`` its end,
    ``tip`` its label, and the "before" fields the judged ones; ``label_size`` and
    ``label_color`` (None) are the player's and the status's. ``label_end`` (the box's end
    when unset) is where the label's room ends: the label is centred in ``start..label_end`` and
    hidden when it does not fit there (a box drawn over the box's last part leaves it clear).
    """

    lane: str
    start: float
    end: float
    y: float
    height: float
    label: str
    status: str
    tip: str | None = None
    label_size: str | None = None
    label_color: str | None = None
    shown: float | None = None
    judged: float | None = None
    label_at: float | None = None
    status_before: str | None = None
    label_before: str | None = None
    tip_before: str | None = None
    opacity: float = 1.0
    label_end: float | None = None

    def __post_init__(self):
        fill = dict(shown=self.start, judged=self.start, label_at=self.end, tip=self.label,
                    label_end=self.end,
                    status_before=self.status, label_before=self.label)
        for name, value in fill.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        if self.tip_before is None:
            object.__setattr__(self, "tip_before", self.tip)


@dataclass(frozen=True)
class Timeline:
    """A whole run for the player: its boxes, the step button's stops and the axis.

    ``stops`` default to the run's end; ``x_end`` (the axis end at rest) to 1.1 times
    the run's end. With ``window_ms`` the axis shows that much time around the clock
    while the run plays, and the whole run once it ends.
    """

    boxes: tuple[Box, ...]
    stops: tuple[float, ...] | None = None
    x_end: float | None = None
    window_ms: float = 0.0
    lane_end: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        ends: dict[str, float] = {}
        for b in self.boxes:
            ends[b.lane] = max(ends.get(b.lane, 0.0), float(b.end))
        object.__setattr__(self, "lane_end", ends)

    @property
    def total(self) -> float:
        """When the last box ends (0 for an empty timeline)."""
        return max((float(b.end) for b in self.boxes), default=0.0)

    @property
    def axis_end(self) -> float:
        return float(self.x_end) if self.x_end is not None else max(self.total * 1.1, 1.0)

    @property
    def stop_times(self) -> list[float]:
        return [float(s) for s in (self.stops if self.stops is not None else [self.total])]


def label_color(status: str) -> str:
    """The colour of a box's label on that status's fill (readable: WCAG AA)."""
    return theme.INK if status in _DARK_LABEL else "white"


def line_color(status: str) -> str:
    """The outline of a box of that status."""
    return theme.INK if status in _DARK_LINE else "white"


def resolve_styles(styles: Mapping[str, dict]) -> dict[str, dict]:
    """Fill, outline and hatch pattern of every status, as the browser looks them up."""
    return {name: dict(fill=st["fill"], line=st.get("line", line_color(name)), hatch=st["hatch"])
            for name, st in styles.items()}


def hatch_patterns(styles: Mapping[str, dict]) -> list[str]:
    """The hatch patterns in use, each drawn by one overlay glyph."""
    return sorted({st["hatch"] for st in styles.values()} - {" ", "", "blank"})


def _label_width_ok(start, end, labels, sizes, min_label_px: float, px_per_ms: float) -> np.ndarray:
    size = np.array([float(str(z).rstrip("px") or 0) for z in sizes])
    need = np.maximum(min_label_px, CHAR_EM * size * np.array([len(lb) for lb in labels]))
    return (end - start) * px_per_ms >= need


def bar_columns(timeline: Timeline, styles: Mapping[str, dict], *, label_size: str,
                min_label_px: float = 0.0) -> dict:
    """The bars source's columns for ``timeline``, drawn at its end state.

    ``styles`` are :func:`resolve_styles`' output. Besides each box's own fields, a
    row holds what the browser draws now (``right``, ``fill``, ``line``, ``alpha``,
    ``label``, ``label_alpha``, ``label_color``, ``tip``), both phases of what changes
    when the box is judged (``label_a``/``label_b``, ``label_color_a``/``label_color_b``,
    ``tip_a``/``tip_b``: after/before), and one bottom/top pair per hatch pattern
    (``hb<j>``/``ht<j>``, zero height where the box has another pattern).
    """
    boxes = timeline.boxes
    n = len(boxes)
    start = np.array([b.start for b in boxes], dtype=float)
    end = np.array([b.end for b in boxes], dtype=float)
    y = np.array([b.y for b in boxes], dtype=float)
    h = np.array([b.height for b in boxes], dtype=float)
    status = [b.status for b in boxes]
    before = [b.status_before for b in boxes]
    label_a = [str(b.label) for b in boxes]
    label_b = [str(b.label_before) for b in boxes]
    color_a = [b.label_color or label_color(s) for b, s in zip(boxes, status)]
    color_b = [b.label_color or label_color(s) for b, s in zip(boxes, before)]
    tip_a = [str(b.tip) for b in boxes]
    tip_b = [str(b.tip_before) for b in boxes]
    sizes = [b.label_size or label_size for b in boxes]
    label_end = np.array([b.label_end for b in boxes], dtype=float)
    opacity = np.array([b.opacity for b in boxes], dtype=float)
    bottom, top = y - h / 2, y + h / 2
    data = dict(
        lane=[b.lane for b in boxes], status=status, status_before=before,
        start=start, end=end, right=end.copy(), mid=(start + label_end) / 2, label_end=label_end,
        y=y, bottom=bottom, top=top,
        shown=np.array([b.shown for b in boxes], dtype=float),
        judged=np.array([b.judged for b in boxes], dtype=float),
        label_at=np.array([b.label_at for b in boxes], dtype=float),
        opacity=opacity, alpha=opacity.copy(),
        fill=[styles[s]["fill"] for s in status], line=[styles[s]["line"] for s in status],
        label=list(label_a), label_a=label_a, label_b=label_b, label_size=sizes,
        label_color=list(color_a), label_color_a=color_a, label_color_b=color_b,
        tip=list(tip_a), tip_a=tip_a, tip_b=tip_b,
        label_alpha=np.ones(n),
    )
    hatch = [styles[s]["hatch"] for s in status]
    for j, pattern in enumerate(hatch_patterns(styles)):
        on = np.array([hp == pattern for hp in hatch], dtype=bool)
        data[f"hb{j}"] = np.where(on, bottom, y)
        data[f"ht{j}"] = np.where(on, top, y)
    if min_label_px > 0:
        ok = _label_width_ok(start, label_end, label_a, sizes, min_label_px,
                             ASSUMED_PLOT_PX / timeline.axis_end)
        data["label_alpha"] = ok.astype(float)
    return data


def at_time_zero(data: dict) -> dict:
    """:func:`bar_columns`' columns redrawn at time 0: every box still to come (no width, no
    outline, no label, no hatch), as the browser draws the start of a run."""
    out = dict(data)
    start = np.asarray(data["start"], dtype=float)
    out["right"] = start.copy()
    out["alpha"] = np.zeros(len(start))
    out["label_alpha"] = np.zeros(len(start))
    for key in data:
        if key[:2] in ("hb", "ht") and key[2:].isdigit():
            out[key] = np.asarray(data["y"], dtype=float).copy()
    return out


def empty_bar_columns(styles: Mapping[str, dict]) -> dict:
    """The bars source's columns with no rows (the same columns as :func:`bar_columns`)."""
    empty = Timeline(())
    return {k: [] for k in bar_columns(empty, styles, label_size="12px")}


def clock_columns(lanes: Sequence[Lane], lane_end: Mapping[str, float], x_end: float = 1.0) -> dict:
    """The clocks source's columns: each lane's clock stopped at its last box's end."""
    ends = [float(lane_end.get(lane.key, 0.0)) for lane in lanes]
    return dict(
        lane=[lane.key for lane in lanes],
        y=[lane.y + lane.clock_dy for lane in lanes],
        x=ends,
        ms=ends,
        lane_end=ends,
        text=[f"{e:,.0f} ms · done" for e in ends],
        align=["right" if e > FLIP_AT * x_end else "left" for e in ends],
        color=[lane.color for lane in lanes],
        done_color=[lane.color for lane in lanes],
    )


def cursor_columns(t: float, *, label: bool = True) -> dict:
    """The wall-clock cursor's one row at time ``t`` (at rest: the run's end), with its time
    written beside it unless ``label`` is False."""
    text = f"wall clock {t:,.0f} ms" if label else ""
    return dict(x=[t], label=[text], align=["right"], offset=[-4], playing=[0])
