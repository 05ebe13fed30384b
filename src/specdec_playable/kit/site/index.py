"""The site's landing page: what the series is, the short path through it for a class, and every
episode with how long it takes."""

from __future__ import annotations

from collections.abc import Sequence

import panel as pn

from . import course
from ..page import GLOSSARY_HREF, GUIDE_HREF, SUMMARY_HREF, EpisodeRef, esc, site_shell

SITE_TITLE = "Speculative Decoding, Playable"


def _episodes(numbers) -> str:
    """"Episode 4", "Episodes 1 and 2", "Episodes 1, 2, 3 and 5"."""
    if len(numbers) == 1:
        return f"Episode {numbers[0]}"
    return f"Episodes {', '.join(str(n) for n in numbers[:-1])} and {numbers[-1]}"


def path_html(times) -> str:
    """The index's short path: which episodes fit a class, in which order, and how long they take."""
    path = course.short_path(times)
    by = {t.number: t for t in times}
    total = sum(by[n].minutes for n in path)
    deeper = [t.number for t in times if t.number not in path]
    rest = ("" if not deeper else
            f" {_episodes(deeper)} {'go' if len(deeper) > 1 else 'goes'} deeper (about "
            f"{sum(by[n].minutes for n in deeper)} minutes{' together' if len(deeper) > 1 else ''}).")
    return (f'<p class="sdp-path"><strong>A {course.CLASS_MINUTES}-minute class:</strong> '
            f'{_episodes(path)}, in that order, about {total} minutes, leaving {course.CLASS_MINUTES - total} for '
            f'questions.{rest} Each time is the page\'s words at {course.WORDS_PER_MINUTE} a minute '
            f'plus {course.MINUTES_PER_STEP} minutes per “Try this” step. Before or after: the '
            f'<a href="{SUMMARY_HREF}">one-page summary</a> with the formulas, and the '
            f'<a href="{GLOSSARY_HREF}">glossary</a>. Teaching it? The '
            f'<a href="{GUIDE_HREF}">teacher’s guide</a> has each episode’s objectives, a '
            f'{course.CLASS_MINUTES}- and a {course.LONG_CLASS_MINUTES}-minute class plan and the '
            'answers.</p>')


def episode_list_html(episodes: Sequence[EpisodeRef], times) -> str:
    """The index's list of episodes: number, title, time, where it sits in the short path, summary."""
    by = {t.number: t for t in times}
    path = set(course.short_path(times)) if times else set()
    items = []
    for e in episodes:
        t = by.get(e.number)
        when = "" if t is None else f'<span class="sdp-time">· {t.minutes} min</span>'
        badge = ("" if t is None else '<span class="sdp-badge">short path</span>' if e.number in path
                 else '<span class="sdp-badge deeper">deeper</span>')
        items.append(f'<li><a href="./{esc(e.slug)}"><span class="n">Episode {e.number}{when}{badge}</span>'
                     f'<span class="t">{esc(e.title)}</span></a><p>{esc(e.summary)}</p></li>')
    return f'<ol class="sdp-episodes">{"".join(items)}</ol>'


def index_page(episodes: Sequence[EpisodeRef], times=()) -> pn.Column:
    """The landing page: what the series is, the short path, and ``episodes`` in order with how
    long each takes (``times``, measured from the pages by the site: :func:`.course.episode_time`;
    empty: the page leaves them out)."""
    body = f"""
<p class="sdp-kicker">An interactive explainer</p>
<h1 class="sdp-title">{SITE_TITLE}</h1>
<p class="sdp-lede">A large language model writes text one token at a time, and every token costs a full,
slow pass through the whole model. Speculative decoding lets a small, fast model guess the next few tokens
and has the big model check all the guesses in a single pass. When the guesses are good, text can arrive
two or three times faster, or more, and it is exactly the text the big model would have written on its own.
When they are bad, the trick makes things slower.</p>
<p class="sdp-lede">These episodes let you run it and see both cases. Every number on them is measured
from a simulation running in front of you or from a real language model running on this server,
labelled as theory, or measured on real hardware with its source named.</p>
{path_html(times) if times else ""}
{episode_list_html(episodes, times)}
<p class="sdp-note">The closed-form theory is from Leviathan, Kalman and Matias, “Fast Inference from
Transformers via Speculative Decoding” (ICML 2023); real forward-pass times were measured on an NVIDIA H200;
the real model is SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), run in numpy on this server's CPU.
The measurements behind the figures are on the <a href="./data">data page</a>.</p>
"""
    return site_shell(body, "index.css", "course.css", name="index")
