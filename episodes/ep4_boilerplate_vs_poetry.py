"""Episode 4 — boilerplate flies, poetry stalls.

How often a draft is accepted is a property of the text: the same speculative
decoder runs several times faster over code than plain decoding, and about as
fast as it (or slower) over a poem. Serve alone with
``panel serve episodes/ep4_boilerplate_vs_poetry.py``.
"""

from specdec_playable.episodes import ep4
from specdec_playable.app.site import episode_alone

page = episode_alone(ep4.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep4.EPISODE.number}: {ep4.EPISODE.title}")
