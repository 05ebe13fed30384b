"""Episode 3 — the quality dial: when does the draft pay for itself?

Draft quality q, draft length k and draft cost c decide the speedup; every move
of a slider simulates 2,000 fresh rounds and sets the measurement beside the
theory. Serve alone with ``panel serve episodes/ep3_the_quality_dial.py``.
"""

from specdec_playable.episodes import ep3
from specdec_playable.app.site import episode_alone

page = episode_alone(ep3.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep3.EPISODE.number}: {ep3.EPISODE.title}")
