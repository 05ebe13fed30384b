"""The summary page: the series on one printable screen. The formulas with their symbols, a worked
example, and one sentence per episode with a link into it at the setting that shows its point.

Each episode writes its own sentence (``summary_sentence`` of its record, in its ``words.py``),
every number computed from the simulation's theory or the shipped measurements at the setting its
link opens (``summary_link``); ``tests/test_course.py`` checks the sentences against the numbers
and the links against each episode's own URL check. A sentence that prices a CPU pass reads the
server's calibration record (``runtime.calibration``), so the sentences are kept per record: the
summary changes once, when the server's first model process has measured, and then says what the
episodes say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from urllib.parse import urlencode

import panel as pn

from ...runtime import service as interface
from ...sim import theory
from .. import words
from ..episode import Episode
from ..exercises import SeriesScore, questions_of
from ..modelstatus import status_line
from ..page import GUIDE_HREF, esc, site_shell
from ..resources import stylesheet

#: The worked example under the formulas.
EXAMPLE = dict(q=0.8, k=4, c=0.1)


def link(episode: Episode) -> str:
    """The address of ``episode`` at the setting its summary sentence describes (relative to the
    site)."""
    query = episode.summary_link
    return f"./{episode.slug}" + (f"?{urlencode(dict(query))}" if query else "")


def _x(v: float) -> str:
    return words.times(v)


@lru_cache(maxsize=64)
def _sentence(episode: Episode, record) -> str:
    return episode.summary_sentence() if episode.summary_sentence else ""


def sentences(episodes: Sequence[Episode]) -> Mapping[int, str]:
    """One sentence per episode (trusted HTML; every number computed by the episode's own words),
    each computed once per process and calibration record (``runtime.service.server_pass_times``)."""
    record = interface.server_pass_times()
    return {ep.number: _sentence(ep, record) for ep in episodes if ep.summary_sentence}


FORMULAS = (
    ("Tokens per round", "E = (1 − q<sup>k+1</sup>) / (1 − q)",
     "the accepted drafts until the first miss, plus the big model's own token"),
    ("Speedup", "speedup = E / (1 + k·c)",
     "a round costs one big-model pass plus k draft steps of c passes each"),
    ("Break-even", "speedup = 1",
     "below the break-even q for a k and c, speculating is slower than not"),
    ("Sampling rule", "accept x with probability min(1, p<sub>big</sub>(x) / p<sub>draft</sub>(x)); "
     "else draw from norm(max(0, p<sub>big</sub> − p<sub>draft</sub>))",
     "keeps p<sub>big</sub> exactly; then q = Σ<sub>x</sub> min(p<sub>big</sub>(x), p<sub>draft</sub>(x))"),
)


def summary_html(episodes: Sequence[Episode]) -> str:
    """The summary's body (trusted HTML built from package text and computed numbers)."""
    q, k, c = EXAMPLE["q"], EXAMPLE["k"], EXAMPLE["c"]
    e = theory.expected_tokens_per_round(q, k)
    formulas = "".join(f'<tr><th scope="row">{name}</th><td class="f">{f}</td><td>{why}</td></tr>'
                       for name, f, why in FORMULAS)
    said = sentences(episodes)
    items = "".join(
        f'<li><a href="{esc(link(ep))}"><strong>Episode {ep.number}</strong> · {esc(ep.title)}</a>'
        f'<br>{said[ep.number]}</li>' for ep in episodes if ep.number in said)
    return (
        '<p class="sdp-kicker">Speculative Decoding, Playable · Summary</p>'
        '<h1 class="sdp-title">Speculative decoding on one page</h1>'
        '<p class="sdp-lede">A small draft model guesses the next k tokens; the big model checks them '
        'all in one pass, keeps the guesses up to the first wrong one and adds one token of its own. '
        '<strong>q</strong> is the acceptance rate (“draft quality q”: the share of drafted tokens '
        'the big model accepts), <strong>k</strong> the draft length, <strong>c</strong> the cost '
        'of one draft step over one big-model step, p<sub>big</sub>(x) and p<sub>draft</sub>(x) the '
        'two models\' next-token distributions.</p>'
        f'<table class="sdp-formulas"><tbody>{formulas}</tbody></table>'
        f'<p class="sdp-example">Example: q = {q:.2f}, k = {k}, c = {c:.2f} gives E = {e:.2f} tokens '
        f'per round and a speedup of {e:.2f} / {1 + k * c:g} = '
        f'{_x(theory.expected_speedup(q, k, c))}. Theory: Leviathan, Kalman and Matias (2023).</p>'
        '<h2>The episodes</h2><p class="sdp-small">Each link opens the episode at the setting the '
        f'sentence describes.<span class="sdp-screen-only"> Teaching a class? The '
        f'<a href="{GUIDE_HREF}">teacher’s guide</a> has the objectives, two class plans and the '
        f'answers.</span></p><ol class="sdp-summary">{items}</ol>')


def series_score(episodes: Sequence[Episode]) -> SeriesScore:
    """The part that adds up this browser's answers to each episode's questions."""
    eps = [e for e in episodes if e.questions]
    return SeriesScore({f"ep{e.number}": questions_of(e.questions) for e in eps},
                       {f"ep{e.number}": (f"Episode {e.number}: {e.title}", f"./{e.slug}#exercises")
                        for e in eps})


def summary_page(episodes: Sequence[Episode], with_score: bool = True,
                 service: interface.Service = interface.NO_MODEL) -> pn.Column:
    """The summary, for one session; with ``with_score``, the score of this browser's answers to
    the episodes' questions under them. Under the navigation, whether ``service``'s model is
    loading, ready or failed (the sentences that price a CPU pass read its measurement)."""
    page = site_shell(summary_html(episodes), "course.css", name="summary")
    if with_score and any(e.questions for e in episodes):  # on the screen only: it prints on one page
        page.insert(2, series_score(episodes).panel())
        page.stylesheets = [*page.stylesheets, stylesheet("exercises.css")]
    page.insert(1, status_line(service, name="summary-model"))  # on the screen only too
    return page
