"""Episode 6 — the fine print: speculative sampling keeps the big model's distribution exactly,
and adapting the draft length k pays when the text changes genre.

Serve alone with ``panel serve episodes/ep6_the_fine_print.py``.
"""

from specdec_playable.episodes import ep6
from specdec_playable.views.site.error import safe_page

page = safe_page(ep6.page)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep6.NUMBER}: {ep6.TITLE}")
