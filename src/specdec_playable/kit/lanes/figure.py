"""The lanes figure: boxes, hatch overlays, labels, lane titles, the lane clocks and the cursor.

Built once per player from its sources (:class:`LaneSources`); the browser then
changes the sources' columns in place on every frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bokeh.models import ColumnDataSource, HoverTool, Label, Range1d
from bokeh.plotting import figure

from .. import theme
from .timeline import Lane, clock_columns, empty_bar_columns


@dataclass(frozen=True)
class LaneSources:
    """The Bokeh models a player's figure draws and its script drives.

    ``name`` prefixes their Bokeh names, so tests can find ``<name>-bars``,
    ``<name>-clocks``, ``<name>-cursor``, ``<name>-stops`` and ``<name>-view``.
    """

    bars: ColumnDataSource
    clocks: ColumnDataSource
    cursor: ColumnDataSource
    stops: ColumnDataSource
    view: ColumnDataSource
    x_range: Range1d

    @classmethod
    def empty(cls, name: str, lanes: Sequence[Lane], styles: dict) -> LaneSources:
        return cls(
            bars=ColumnDataSource(empty_bar_columns(styles), name=f"{name}-bars"),
            clocks=ColumnDataSource(clock_columns(lanes, {}), name=f"{name}-clocks"),
            cursor=ColumnDataSource(dict(x=[0.0], label=[""], align=["left"], offset=[4], playing=[0]),
                                    name=f"{name}-cursor"),
            stops=ColumnDataSource(dict(t=[]), name=f"{name}-stops"),
            view=ColumnDataSource(dict(x_end=[1000.0], window=[0.0]), name=f"{name}-view"),
            x_range=Range1d(0, 1000, bounds=(0, None)),
        )


def _style_lanes(fig, lanes: Sequence[Lane], name: str) -> None:
    """Lane titles inside the plot, above each lane, pinned to its left edge, so the lanes keep
    the full width on a phone (an axis label would take a third); a plain frame."""
    fig.yaxis.visible = False
    for lane in lanes:
        fig.add_layout(Label(
            x=4, x_units="screen", y=lane.y + lane.title_dy, text=lane.title,
            text_font_size="13px", text_color=theme.INK, text_font_style="bold",
            text_baseline="bottom", background_fill_color=theme.PAPER,
            background_fill_alpha=0.85, name=f"{name}-lane-{lane.key}"))
    fig.ygrid.grid_line_color = None
    fig.xgrid.grid_line_color = theme.GRID
    fig.xaxis.axis_label_text_color = theme.MUTED
    fig.xaxis.major_label_text_color = theme.MUTED
    fig.xaxis.formatter.use_scientific = False
    fig.outline_line_color = None
    fig.background_fill_color = theme.PAPER
    fig.border_fill_color = theme.PAPER
    fig.min_border_left = 10
    fig.toolbar.logo = None  # a 20 px link to Bokeh's site: under the 24 px a target needs


def lanes_figure(lanes: Sequence[Lane], src: LaneSources, hatches: Sequence[str], *, name: str,
                 height: int, x_label: str, y_pad: tuple[float, float], lane_clocks: bool):
    """The figure of a player: one quad per box, one overlay per hatch pattern, and the clocks."""
    ys = [lane.y for lane in lanes]
    y0, y1 = min(ys) - y_pad[0], max(ys) + y_pad[1]
    fig = figure(
        name=f"{name}-figure", height=height, sizing_mode="stretch_width",
        x_range=src.x_range, y_range=Range1d(y0, y1),
        tools="xpan,xwheel_zoom,reset,save", active_scroll=None, toolbar_location="right",
        x_axis_label=x_label,
    )
    _style_lanes(fig, lanes, name)

    boxes = fig.quad(
        left="start", right="right", bottom="bottom", top="top", source=src.bars,
        fill_color="fill", fill_alpha="alpha", line_color="line", line_alpha="alpha", line_width=1.5,
    )
    # Hatches are drawn by one overlay per pattern with scalar hatch properties: vectorised
    # hatching makes BokehJS build a pattern canvas per row on every data change (~70 ms a
    # frame at 120 boxes). A row is hatched by giving it height in its pattern's overlay.
    for j, pattern in enumerate(hatches):
        fig.quad(left="start", right="right", bottom=f"hb{j}", top=f"ht{j}", source=src.bars,
                 fill_alpha=0, line_alpha=0, hatch_pattern=pattern, hatch_color="white",
                 hatch_alpha=1.0, hatch_scale=7)
    fig.text(
        x="mid", y="y", text="label", source=src.bars, text_alpha="label_alpha",
        text_align="center", text_baseline="middle", text_font_size="label_size",
        text_color="label_color", text_font_style="bold",
    )
    fig.segment(x0="x", x1="x", y0=y0, y1=y1, source=src.cursor,
                line_color=theme.INK, line_dash="dashed", line_alpha=0.6)
    fig.text(x="x", y=y0 + 0.03, text="label", text_align="align", source=src.cursor,
             text_font_size="12px", text_color=theme.MUTED, text_baseline="bottom", x_offset="offset")
    if lane_clocks:
        fig.text(x="x", y="y", text="text", text_align="align", source=src.clocks,
                 text_font_size="14px", text_font_style="bold", text_color="color",
                 text_baseline="bottom", y_offset=-2)
    # Shown by the player when the finished run is cropped to keep its labels (lanes.js).
    fig.add_layout(Label(
        x=4, x_units="screen", y=y0 + 0.03, text="◀ earlier rounds (drag)",
        text_font_size="11px", text_color=theme.MUTED, text_baseline="bottom", visible=False,
        background_fill_color=theme.PAPER, background_fill_alpha=0.85, name=f"{name}-more"))
    fig.add_tools(HoverTool(renderers=[boxes], tooltips=[
        ("", "@tip"), ("from", "@start{0,0} ms"), ("to", "@end{0,0} ms")]))
    theme.lean(fig)
    return fig
