"""Episode 8 — busy GPUs and token trees.

Speculation at a batch size, priced with measured H200 pass times, and a tree of
guesses against a chain with the same verified positions. Serve alone with
``panel serve episodes/ep8_busy_gpus_and_token_trees.py``.
"""

from specdec_playable.episodes import ep8
from specdec_playable.app.site import episode_alone

page = episode_alone(ep8.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep8.EPISODE.number}: {ep8.EPISODE.title}")
