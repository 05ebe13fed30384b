"""The player's controls (Play/Pause, an optional Step, Restart, a speed choice) and its script.

One ``CustomJS`` per player runs ``kit/static/lanes.js`` (with the episode's frame
hook appended) on every click and whenever the server replaces the timeline; the
file's header is the contract for its arguments. Only the clicks and the speed choice
travel to the server, as ordinary widget events; frames never do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bokeh.layouts import row
from bokeh.models import Button, CustomJS, Select

from .. import theme
from ..resources import script, stylesheet
from .figure import LaneSources
from .timeline import FLIP_AT

#: Speed choices: label -> simulated ms per real ms.
SPEEDS = {"0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0, "2×": 2.0, "4×": 4.0}
REAL_TIME = "1× (real time)"
PLAY, PAUSE = "Play", "Pause"
#: While a run plays in a window, the clock stays this far into the window.
FOLLOW_AT = 0.7
#: A frame never advances the clock by more than this much wall time (a background tab
#: pauses animation frames; on its return the run resumes instead of jumping).
MAX_STEP_MS = 100.0
#: The font family of the figure's labels (Bokeh's default), for measuring them in the browser.
LABEL_FONT = "helvetica"
#: The names the player's script uses for its own arguments.
PLAYER_ARGS = frozenset({"bars", "clocks", "cursor", "stops", "view", "xr", "fig", "play", "step",
                         "restart", "speed", "opts"})
_NO_FRAME_HOOK = "function sdp_frame() {}\n"


class PlayerControls:
    """The buttons and the speed choice of one player, wired to its figure by one script.

    ``name`` prefixes the Bokeh names: ``<name>-play``, ``<name>-restart``,
    ``<name>-speed`` and (with ``step_label``) ``<name>-step``. ``frame_hook`` names a
    file in ``kit/static`` that defines ``sdp_frame(t)`` (see ``lanes.js``), and
    ``frame_args`` the extra Bokeh models or values it uses. ``cursor_label`` draws the
    cursor's time beside it; ``live`` names the page's live fields (``lanes.js``).
    ``rest_labels`` names the statuses whose boxes keep their labels in a finished run on a
    narrow figure (``lanes.js``: it then shows the end of the run, as much as fits them, and
    says so).
    ``opens_at_start`` rests a new timeline at its start until the first Play or Step.
    """

    def __init__(self, src: LaneSources, fig, *, name: str, styles: Mapping[str, dict],
                 hatches: list[str], speeds: Mapping[str, float] | None = None,
                 speed: str | None = None, step_label: str | None = None,
                 frame_hook: str | None = None, frame_args: Mapping | None = None,
                 min_label_px: float = 0.0, cursor_label: bool = True, live: str = "",
                 rest_labels: Sequence[str] = (), opens_at_start: bool = False):
        speeds = dict(speeds or SPEEDS)
        speed = speed or (REAL_TIME if REAL_TIME in speeds else next(iter(speeds)))
        if speed not in speeds:
            raise ValueError(f"speed must be one of {list(speeds)}; got {speed!r}")
        extra = dict(frame_args or {})
        clash = set(extra) & PLAYER_ARGS
        if clash:
            raise ValueError(f"frame_args may not reuse the player's names: {sorted(clash)}")
        # Each control a 32 px target at least (targets.css), as every widget of a page.
        tap = stylesheet("targets.css")
        self.play = Button(label=PLAY, button_type="primary", width=90, name=f"{name}-play",
                           stylesheets=[stylesheet("play_button.css"), tap])
        self.restart = Button(label="Restart", width=90, name=f"{name}-restart", stylesheets=[tap])
        # The title is for assistive technology; sighted visitors read the options.
        self.speed = Select(value=speed, options=list(speeds), width=150, name=f"{name}-speed",
                            title="Playback speed", stylesheets=[stylesheet("hidden_label.css"), tap])
        self.step = (Button(label=step_label, width=150, name=f"{name}-step", stylesheets=[tap])
                     if step_label else None)
        opts = dict(speeds=speeds, styles=dict(styles), hatches=list(hatches),
                    min_label_px=float(min_label_px), flip_at=FLIP_AT,
                    follow_at=FOLLOW_AT, max_step_ms=MAX_STEP_MS, muted=theme.MUTED,
                    labels=dict(play=PLAY, pause=PAUSE), font=LABEL_FONT,
                    cursor_label=bool(cursor_label), live=str(live),
                    rest_labels=[str(status) for status in rest_labels],
                    open_at_start=bool(opens_at_start))
        self.script = callback = CustomJS(
            args=dict(bars=src.bars, clocks=src.clocks, cursor=src.cursor, stops=src.stops,
                      view=src.view, xr=src.x_range, fig=fig, play=self.play, step=self.step,
                      restart=self.restart, speed=self.speed, opts=opts, **extra),
            code=script("lanes.js") + (script(frame_hook) if frame_hook else _NO_FRAME_HOOK))
        self.play.js_on_click(callback)
        self.restart.js_on_click(callback)
        if self.step is not None:
            self.step.js_on_click(callback)
        src.bars.js_on_change("data", callback)
        buttons = [self.play] + ([self.step] if self.step is not None else []) + [self.restart]
        # Wraps onto a second line on a narrow screen instead of overflowing it.
        self.row = row(*buttons, self.speed, sizing_mode="stretch_width",
                       stylesheets=[":host { flex-wrap: wrap; row-gap: 6px; }"])
