"""Episode 5 — the break-even map: where speculation backfires.

Speedup against acceptance rate, one theory curve per draft length, the region
below 1x shaded; Simulate drops fresh Monte-Carlo points onto the map and
presets place real systems on it. Serve alone with
``panel serve episodes/ep5_the_break_even_map.py``.
"""

from specdec_playable.episodes import ep5
from specdec_playable.app.site import episode_alone

page = episode_alone(ep5.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep5.EPISODE.number}: {ep5.EPISODE.title}")
