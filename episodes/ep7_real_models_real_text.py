"""Episode 7 — real models, real text: watch a real model speculate, live.

SmolLM2-135M writes on the server while a draft guesses its next tokens; each Run is a
speculative run and a plain run of the same prompt, both measured, replayed on Episode 2's
lanes. Serve alone with ``panel serve episodes/ep7_real_models_real_text.py``.
"""

from specdec_playable.episodes import ep7
from specdec_playable.app.site import episode_alone

page = episode_alone(ep7.EPISODE)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep7.EPISODE.number}: {ep7.EPISODE.title}")
