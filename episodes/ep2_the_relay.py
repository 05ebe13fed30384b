"""Episode 2 — the relay: draft fast, verify in one pass.

A small draft model proposes k tokens, one cheap step each; the big model checks
them all in one pass, keeps the matching start and writes its own token at the
first miss, so the output is exactly its own text. Serve alone with
``panel serve episodes/ep2_the_relay.py``.
"""

from specdec_playable.episodes import ep2
from specdec_playable.app.site import episode_alone

page = episode_alone(ep2.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep2.EPISODE.number}: {ep2.EPISODE.title}")
