"""Episode 4 — boilerplate flies, poetry stalls.

How often a draft is accepted is a property of the text: the same speculative
decoder runs several times faster over code than plain decoding, and about as
fast as it (or slower) over a poem. Serve alone with
``panel serve episodes/ep4_boilerplate_vs_poetry.py``.
"""

from specdec_playable.episodes import ep4
from specdec_playable.views.site.error import safe_page

page = safe_page(ep4.page)

if __name__.startswith("bokeh") or __name__ == "__main__":
    page.servable(title=f"Episode {ep4.NUMBER}: {ep4.TITLE}")
