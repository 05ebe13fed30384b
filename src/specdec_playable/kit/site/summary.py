"""The summary page: the series on one printable screen. The formulas with their symbols, a worked
example, and one sentence per episode with a link into it at the setting that shows its point.

Every number in a sentence is computed here from the simulation's theory or the shipped
measurements, at the setting its link opens (:data:`LINKS`); ``tests/test_course.py`` checks the
sentences against the numbers and the links against each episode's own URL check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from urllib.parse import urlencode

import panel as pn

from ...data import measured
from ...sim import clocks, theory
from ...state.ep2 import BIG_PASS_MS, DRAFT_STEP_MS
from ...state import K_SLIDER_MAX as EP3_K_MAX
from ...state.ep3 import QualityDial
from ...state.ep4 import BoilerplateVsPoetry
from ...state.ep6 import FinePrint
from ...data.recorded import recorded_meta, recorded_runs
from ...state.cpu import cpu_passes
from ...state.ep8 import BusyAndTrees, h200_curve
from ...prose import words
from ..ep6 import RED_FLAG
from ..kit.exercises import SeriesScore, questions_of
from ..kit.page import GUIDE_HREF, EpisodeRef, esc, site_shell
from ..kit.resources import stylesheet

#: The worked example under the formulas.
EXAMPLE = dict(q=0.8, k=4, c=0.1)
#: Episode 2's draft cost: one 60 ms draft step over one 600 ms pass.
EP2_C = DRAFT_STEP_MS / BIG_PASS_MS
_EP3 = QualityDial.param
_EP4 = BoilerplateVsPoetry.param
#: Per episode, the setting its link opens (each a value the episode's link check accepts as is).
LINKS: dict[int, dict[str, object]] = {
    1: {"n_tokens": 16},
    2: {"k": 4, "q": 0.8},
    3: {"q": _EP3.q.default, "k": theory.best_k(_EP3.q.default, _EP3.c.default, k_max=EP3_K_MAX),
        "c": _EP3.c.default},
    4: {"left": _EP4.left.default, "right": _EP4.right.default},
    5: {"k": 4, "c": 0.15},
    6: {"bias": 0.9, "n_samples": 100_000},
    7: {"task": "repeat", "draft": "lookup", "k": 4},
    8: {"batch": 1},
}


def link(episode: EpisodeRef) -> str:
    """The address of ``episode`` at the setting of :data:`LINKS` (relative to the site)."""
    query = LINKS.get(episode.number)
    return f"./{episode.slug}" + (f"?{urlencode(query)}" if query else "")


def _x(v: float) -> str:
    return words.times(v)


@cache
def sentences() -> Mapping[int, str]:
    """One sentence per episode (trusted HTML; every number computed), computed once."""
    out = {}
    n = LINKS[1]["n_tokens"]
    comp = clocks.sequential_vs_parallel(n, float(BIG_PASS_MS))
    out[1] = (f"Writing {words.plural(n, 'token')} takes "
              f"{words.plural(round(comp.sequential_ms / BIG_PASS_MS), 'pass')}, "
              f"one after another; checking {n} given tokens takes "
              f"{words.plural(round(comp.parallel_ms / BIG_PASS_MS), 'pass')}, since one pass reads "
              "every position at once.")
    q2, k2 = LINKS[2]["q"], LINKS[2]["k"]
    e2 = theory.expected_tokens_per_round(q2, k2)
    out[2] = (f"A draft guesses k = {k2} tokens and one big-model pass checks them all: at q = {q2:.2f} "
              f"a round writes E = {e2:.2f} tokens for the cost of 1 + {k2} × {EP2_C:g} = "
              f"{1 + k2 * EP2_C:g} passes, {_x(theory.expected_speedup(q2, k2, EP2_C))} by the "
              "theory, and the text is exactly the big model's.")
    q3, k3, c3 = (LINKS[3][x] for x in ("q", "k", "c"))
    out[3] = (f"Each q and c has a best draft length: at q = {q3:.2f} and c = {c3:.2f} it is k = {k3} "
              f"({_x(theory.expected_speedup(q3, k3, c3))}); at k = {EP3_K_MAX} speculating is slower "
              f"once q falls below {theory.break_even_q(EP3_K_MAX, c3):.2f}.")
    means = measured.genre_means()
    left, right = means[LINKS[4]["left"]], means[LINKS[4]["right"]]
    out[4] = ("How often a draft is kept depends on the text: a draft head trained to imitate the "
              f"model is kept at a measured {left['alpha']:.2f} on Python and "
              f"{right['alpha']:.2f} on a poem.")
    c5 = LINKS[5]["c"]
    be = {k: theory.break_even_q(k, c5) for k in (1, 4, 8)}
    out[5] = (f"Below its break-even q speculating is slower: at c = {c5:.2f} that is q = {be[1]:.2f} "
              f"for k = 1, {be[4]:.2f} for k = 4 and {be[8]:.2f} for k = 8, and a dearer draft moves "
              "every break-even towards q = 1.")
    fp = FinePrint(**LINKS[6], rng=0)
    fit = fp.fit_big
    unbiased = FinePrint(n_samples=fp.n_samples, rng=0).acceptance_theory
    verdict = ("still follow p<sub>big</sub>" if fit.p_value >= RED_FLAG
               else "are flagged against p<sub>big</sub>")
    out[6] = ("Speculative sampling keeps the big model's distribution exactly: with the draft pushed "
              f"to one favourite token (bias {fp.bias:.1f}) the acceptance rate Σ min(p<sub>big</sub>, "
              f"p<sub>draft</sub>) is {fp.acceptance_theory:.2f} (unbiased: {unbiased:.2f}), and {fp.n_samples:,} "
              "draws "
              f"{verdict} (chi-square p-value {fit.p_value:.2f}).")
    cpu, gpu = cpu_passes(), h200_curve()
    r_cpu = cpu.ratio(5)
    r_gpu = float(gpu.time_ms(5) / gpu.time_ms(1))
    run = recorded_runs().get((LINKS[7]["task"], LINKS[7]["draft"]))
    rec = ("" if run is None or not run.finished else
           f" In the run recorded on {recorded_meta()['date']}, prompt lookup on repeating a sentence was "
           f"{_x(run.speedup)} as fast as plain decoding.")
    need = (f", so even a free draft pays at k = 4 only if its guesses are accepted at a rate of at "
            f"least q = {cpu.free_draft_break_even(4):.2f}" if 1 < r_cpu < 5 else "")
    out[7] = (f"A real model on a CPU, where a pass over 5 positions costs {_x(r_cpu)} a "
              f"one-position step (on the H200, {_x(r_gpu)}){need}." + rec)
    busy = BusyAndTrees(**LINKS[8])
    b = busy.break_even_batch
    chain, tree = busy.chain_theory, busy.tree_theory
    out[8] = ("On a busy GPU the drafts' extra positions stop being free: at q = "
              f"{busy.q:.2f}, k = {busy.k}, c = {busy.c:.2f} speculating is slower "
              + (f"from batch size B = {b:,}" if b is not None else "at no batch size up to the page's largest")
              + f". And at q = {busy.tree_q:.2f} a {busy.width} × {busy.depth} token tree decides "
              f"{tree:.2f} tokens per pass against {chain:.2f} for a chain checking the same "
              f"{busy.positions} positions (theory).")
    return out


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


def summary_html(episodes: Sequence[EpisodeRef]) -> str:
    """The summary's body (trusted HTML built from package text and computed numbers)."""
    q, k, c = EXAMPLE["q"], EXAMPLE["k"], EXAMPLE["c"]
    e = theory.expected_tokens_per_round(q, k)
    formulas = "".join(f'<tr><th scope="row">{name}</th><td class="f">{f}</td><td>{why}</td></tr>'
                       for name, f, why in FORMULAS)
    said = sentences()
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


def series_score(episodes: Sequence[EpisodeRef], exercises: Mapping[int, Sequence]) -> SeriesScore:
    """The part that adds up this browser's answers to each episode's questions (``exercises``:
    episode number -> its questions)."""
    eps = [e for e in episodes if exercises.get(e.number)]
    return SeriesScore({f"ep{e.number}": questions_of(exercises[e.number]) for e in eps},
                       {f"ep{e.number}": (f"Episode {e.number}: {e.title}", f"./{e.slug}#exercises")
                        for e in eps})


def summary_page(episodes: Sequence[EpisodeRef], exercises: Mapping[int, Sequence] | None = None,
                 ) -> pn.Column:
    """The summary, for one session; with ``exercises`` (episode number -> its questions), the
    score of this browser's answers under the episodes."""
    page = site_shell(summary_html(episodes), "course.css", name="summary")
    if exercises:  # on the screen only: the summary prints on one page
        page.insert(2, series_score(episodes, exercises).panel())
        page.stylesheets = [*page.stylesheets, stylesheet("exercises.css")]
    return page
