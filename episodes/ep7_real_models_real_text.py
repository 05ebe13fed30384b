"""Episode 7 — real models, real text: watch a real model speculate, live.

SmolLM2-135M writes on the server while a draft guesses its next tokens; each Run is a
speculative run and a plain run of the same prompt, both measured, replayed on Episode 2's
lanes. Serve alone with ``panel serve episodes/ep7_real_models_real_text.py``.
"""

from specdec_playable.episodes import ep7
from specdec_playable.views.site.error import safe_page

page = safe_page(ep7.page)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep7.NUMBER}: {ep7.TITLE}")
