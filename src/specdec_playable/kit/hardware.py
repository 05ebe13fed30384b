"""Real hardware: time of one forward pass against positions scored (H200 data)."""

from __future__ import annotations

import panel as pn
from bokeh.models import ColumnDataSource, HoverTool, Legend, LegendItem
from bokeh.plotting import figure

import numpy as np

from ..data import hardware
from . import theme
from .a11y import describe
from .page import esc, prose

_MODELS = (
    ("llama-8b-shape", "8B shape", theme.BIG),
    ("llama-1b-shape", "1B shape", theme.DRAFT),
    ("tiny-160m-shape", "160M shape", theme.ACCEPTED),
)
_IMPLS = (("gemm-cudagraph", "solid", "CUDA graph"), ("hf-eager-kvcache512", "dashed", "eager PyTorch"))
_SHORT = {"gemm-cudagraph": "graph", "hf-eager-kvcache512": "eager"}


def pass_cost_figure(name: str = "hardware"):
    """Log-log chart of pass time vs positions, one line per model shape and implementation."""
    costs = hardware.load_pass_costs()
    fig = figure(
        name=f"{name}-figure", height=460, sizing_mode="stretch_width",
        x_axis_type="log", y_axis_type="log", tools="save,reset",
        x_axis_label="positions scored in one pass", y_axis_label="time of one pass (ms, median)",
    )
    items, dot_renderers = [], []
    for model, label, color in _MODELS:
        for impl, dash, impl_label in _IMPLS:
            s = costs[(model, impl)]
            src = ColumnDataSource(dict(n=s.n_positions, ms=s.median_ms, p10=s.p10_ms,
                                        p90=s.p90_ms, who=[f"{label}, {impl_label}"] * len(s.n_positions)),
                                   name=f"{name}-{model}-{impl}")
            line = fig.line("n", "ms", source=src, line_color=color, line_dash=dash, line_width=2.5)
            dots = fig.scatter("n", "ms", source=src, color=color, size=5,
                               marker="circle" if impl == "gemm-cudagraph" else "triangle")
            items.append(LegendItem(label=f"{label.split()[0]} · {_SHORT[impl]}",
                                    renderers=[line, dots]))
            dot_renderers.append(dots)
    # One hover tool for every series' dots (each row says which series it is).
    fig.add_tools(HoverTool(renderers=dot_renderers, tooltips=[
        ("", "@who"), ("positions", "@n"), ("median", "@ms{0.00} ms"),
        ("p10–p90", "@p10{0.00}–@p90{0.00} ms")]))
    legend = Legend(items=items, click_policy="hide", label_text_font_size="12px", ncols=2,
                    border_line_alpha=0)
    fig.add_layout(legend, "below")
    fig.xaxis.ticker = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    fig.xaxis.major_label_overrides = {1: "1", 2: "2", 4: "4", 8: "8", 16: "16", 32: "32",
                                       64: "64", 128: "128", 256: "256", 512: "512"}
    fig.yaxis.ticker = [0.5, 1, 2, 5, 10, 20, 40]
    fig.yaxis.major_label_overrides = {0.5: "0.5", 1: "1", 2: "2", 5: "5", 10: "10",
                                       20: "20", 40: "40"}
    for ax in (*fig.xaxis, *fig.yaxis):
        ax.axis_label_text_color = theme.MUTED
        ax.major_label_text_color = theme.MUTED
    fig.outline_line_color = None
    fig.toolbar.logo = None
    theme.lean(fig)
    describe(fig, pass_cost_words(costs))
    return fig


def pass_cost_words(costs) -> str:
    """The chart's text alternative: each line's time at its fewest and most positions."""
    lines = []
    for model, label, _ in _MODELS:
        for impl, _, impl_label in _IMPLS:
            c = costs[(model, impl)]
            lo, hi = int(c.n_positions.min()), int(c.n_positions.max())
            lines.append(f"{label}, {impl_label}: {c.at(lo):.2f} ms for {lo} position"
                         f"{'' if lo == 1 else 's'}, {c.at(hi):.2f} ms for {hi}")
    return ("Time of one forward pass against the positions it scores, both axes logarithmic, one "
            "line per model shape and implementation, measured: " + "; ".join(lines) + ".")


#: A line counts as flat while a pass costs at most this much more than scoring one position.
FLAT_WITHIN = 0.10


def flat_until(costs: hardware.PassCosts, within: float = FLAT_WITHIN) -> int:
    """The most positions up to which every measured pass costs at most ``within`` more than one."""
    base = costs.at(1)
    ok = costs.median_ms <= base * (1 + within)
    n = costs.n_positions
    return int(n[: int(np.argmin(ok))].max()) if not ok.all() else int(n.max())


def hardware_section(name: str = "hardware") -> pn.Column:
    """Chart plus the lesson in measured numbers and the data's provenance."""
    costs = hardware.load_pass_costs()
    g8 = costs[("llama-8b-shape", "gemm-cudagraph")]
    e8 = costs[("llama-8b-shape", "hf-eager-kvcache512")]
    meta = hardware.load_meta()
    one, six, many = g8.at(1), g8.at(6), g8.at(512)
    text = f"""
<h2>Real GPUs have the same shape</h2>
<p class="sdp-lede">On a real {esc(meta['gpu'])}, a forward pass of an 8B-parameter model shape takes
<strong>{one:.2f} ms</strong> to score 1 position, <strong>{six:.2f} ms</strong> to score 6
(+{(six / one - 1) * 100:.1f}%), and still only <strong>{many:.1f} ms</strong> for 512. Decoding one token
is limited by reading {g8.weight_bytes / 1e9:.1f} GB of weights from memory, not by arithmetic, so scoring a
few more positions in the same pass is almost free. That is the loophole speculative decoding uses.</p>
"""
    note = f"""
<p class="sdp-note"><strong>Why are the dashed lines so much higher?</strong> They run the same shapes
in eager PyTorch, launching every GPU kernel one by one from Python: for the 8B shape a pass costs
{e8.median_ms.min():.0f} to {e8.median_ms.max():.0f} ms whatever the number of positions, mostly waiting on
launches rather than on the GPU. Production servers record the whole pass once as a CUDA graph and replay it,
which is what the solid lines (“graph” in the legend) measure. Either way the lines stay nearly flat over the
few positions a draft asks the big model to check: the solid 8B line stays within
{FLAT_WITHIN:.0%} of its one-position time up to {flat_until(g8)} positions, and only rises beyond that.</p>
<p class="sdp-note">Data: median of 20–50 timed repeats after warm-up, CUDA events, one
{esc(meta['gpu'])}, torch {esc(meta['torch'])}, transformers {esc(meta['transformers'])},
measured {esc(meta['date_utc'])} with random bf16 weights (a pass's time does not depend on the weight
values). Solid: every linear layer of the shape replayed as one CUDA graph. Dashed: a
LlamaForCausalLM step in eager mode with a 512-token KV cache. Click a legend entry to hide a line.</p>
"""
    return pn.Column(
        prose(text),
        pn.pane.Bokeh(pass_cost_figure(name), sizing_mode="stretch_width"),
        prose(note),
        sizing_mode="stretch_width", name=f"{name}-section",
    )
