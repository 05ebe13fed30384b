"""Episode 6 — the fine print: speculative sampling keeps the big model's distribution exactly,
and adapting the draft length k pays when the text changes genre.

Serve alone with ``panel serve episodes/ep6_the_fine_print.py``.
"""

from specdec_playable.episodes import ep6
from specdec_playable.app.site import episode_alone

page = episode_alone(ep6.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep6.EPISODE.number}: {ep6.EPISODE.title}")
