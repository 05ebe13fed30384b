"""Episode 1 — writing is one-at-a-time, checking is all-at-once.

Generating N tokens takes N sequential big-model passes; verifying N given
tokens takes one. Serve alone with ``panel serve episodes/ep1_writing_vs_checking.py``.
"""

from specdec_playable.episodes import ep1
from specdec_playable.app.site import episode_alone

page = episode_alone(ep1.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep1.EPISODE.number}: {ep1.EPISODE.title}")
