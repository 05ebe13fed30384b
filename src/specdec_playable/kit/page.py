"""The shell every episode page shares (heading, lede, what to try, navigation), and the small
helpers every episode's view builds with: prose panes and their stylesheets, sliders, a panel
beside its controls, and :class:`StateView`, the base of the episode Viewers."""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import panel as pn
import param

from .a11y import AccessibleNames
from .anchors import FragmentTarget
from .figures import FigureSaver
from .resources import stylesheet, theme_css
from .terms import GLOSSARY_HREF, link_terms

log = logging.getLogger("specdec_playable")


def esc(text: object) -> str:
    """HTML-escape anything that did not come from this package's own literals."""
    return html.escape(str(text), quote=True)


def _data(attrs: Mapping[str, object] | None) -> str:
    return "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in (attrs or {}).items())


def stat(value: str, label: str, *, css_class: str = "", data: Mapping[str, object] | None = None,
         value_data: Mapping[str, object] | None = None, hidden: bool = False) -> str:
    """One big number with its caption, as HTML (both escaped).

    ``data`` and ``value_data`` become ``data-*`` attributes of the stat and of its number
    (for the lane player's live fields, say: ``value_data={"clock": 3600}``).
    """
    return (f'<div class="sdp-stat {esc(css_class)}"{_data(data)}{" hidden" if hidden else ""}>'
            f'<div class="v"{_data(value_data)}>{esc(value)}</div><div class="l">{esc(label)}</div></div>')


def page_css(*extra: str) -> str:
    """The page shell's stylesheet, followed by the named files of ``kit/static/``."""
    return stylesheet("page.css", *extra)


def prose(html_text: str, *extra_css: str, **params) -> pn.pane.HTML:
    """A full-width block of trusted package HTML (prose, a key, a heading) in the page's style.

    A glossary term in fixed text links to its entry the first time the block uses it
    (:func:`kit.terms.link_terms`).
    """
    if isinstance(html_text, str):
        html_text = link_terms(html_text)
    return pn.pane.HTML(html_text, sizing_mode="stretch_width", stylesheets=[page_css(*extra_css)],
                        **params)


def slider(p: param.Parameter, **kwargs) -> pn.widgets.Widget:
    """A full-width slider for a numeric parameter (whole numbers for an Integer)."""
    kind = pn.widgets.IntSlider if isinstance(p, param.Integer) else pn.widgets.FloatSlider
    return kind.from_param(p, sizing_mode="stretch_width", **kwargs)


def beside(controls: pn.viewable.Viewable, panel: pn.viewable.Viewable, *, basis: str,
           min_width: int | None = None) -> pn.FlexBox:
    """Controls with a panel (numbers, a table) to their right that moves under them on a phone.

    The two stand :data:`BESIDE_GAP` apart, so a slider's handle at the end of its track (it
    overhangs the track by half its width) never covers the panel's first words."""
    extra = {} if min_width is None else {"min_width": min_width}
    return pn.FlexBox(
        controls, pn.Column(panel, sizing_mode="stretch_width", styles={"flex": f"1 1 {basis}"}, **extra),
        sizing_mode="stretch_width", flex_wrap="wrap", gap=f"0 {BESIDE_GAP}")


#: The room between controls and the panel beside them: more than half the widest slider handle
#: (44 px on a phone, ``kit/static/targets.css``) past the end of its track.
BESIDE_GAP = "24px"


class StateView(pn.viewable.Viewer):
    """A Viewer bound to one state object: a fresh one of the ``state`` parameter's class unless
    one is given. Subclasses declare ``state = param.ClassSelector(class_=...)`` and build their
    layout in :meth:`layout`; the view declares the theme's colours at its root, so it shows
    the same alone (in a notebook cell, say) as in its page."""

    def __init__(self, **params):
        params.setdefault("state", type(self).param["state"].class_())
        super().__init__(**params)

    def layout(self) -> pn.viewable.Viewable:
        raise NotImplementedError

    def __panel__(self):
        root = self.layout()
        root.stylesheets = [theme_css(), *root.stylesheets]
        return root


#: Where the one-screen summary of the series is served, relative to any page of the site.
SUMMARY_HREF = "./summary"
#: Where the teacher's guide is served (``kit/site/guide.py``).
GUIDE_HREF = "./guide"


class EpisodeRef(Protocol):
    """What the navigation needs to know of another episode."""

    number: int
    slug: str
    title: str


def nav_html(previous: EpisodeRef | None = None, following: EpisodeRef | None = None,
             deeper: EpisodeRef | None = None, *, path_ends: bool = False) -> str:
    """Links to the index and to the episodes before and after this one (when there are some),
    then to the summary and the glossary. ``deeper`` is the episode that comes next in number
    when ``following`` is the next on the short path instead; ``path_ends``: this episode is the
    short path's last, which leads on to the summary."""
    links = ['<a href="./">← All episodes</a>']
    if path_ends:
        links.append(f'<a href="{SUMMARY_HREF}">The short path ends here: the summary →</a>')
    if previous is not None:
        links.append(f'<a href="./{esc(previous.slug)}">← Episode {previous.number}: '
                     f'{esc(previous.title)}</a>')
    if following is not None:
        on = " (next on the short path)" if deeper is not None else ""
        links.append(f'<a href="./{esc(following.slug)}" rel="next">Episode {following.number}: '
                     f'{esc(following.title)} →{on}</a>')
    if deeper is not None:
        links.append(f'<a href="./{esc(deeper.slug)}">Or deeper, Episode {deeper.number}: '
                     f'{esc(deeper.title)} →</a>')
    links += [f'<a href="{SUMMARY_HREF}">Summary</a>', f'<a href="{GLOSSARY_HREF}">Glossary</a>']
    return '<nav class="sdp-nav" aria-label="Episodes">' + "".join(links) + "</nav>"


def steps_html(steps: Sequence[str]) -> str:
    """An episode's "Try this" steps (trusted package HTML) as a numbered list."""
    if len(steps) == 1:
        return steps[0]
    return '<ol class="sdp-steps">' + "".join(f"<li>{s}</li>" for s in steps) + "</ol>"


def _lede(text: str) -> str:
    return f'<p class="sdp-lede">{text}</p>'


#: The ``<meta name="viewport">`` every page sends: without it a phone lays the page out at
#: 980 px and shrinks it to fit its screen.
VIEWPORT = "width=device-width, initial-scale=1"


def declare_viewport() -> None:
    """Have the page being built send :data:`VIEWPORT` in its HTML head.

    Panel's page template writes the tag from the document's ``meta`` template variable; this
    sets it on the document being built (a server session, ``panel convert``), and does nothing
    where there is none (a notebook cell, a test).
    """
    doc = pn.state.curdoc
    if doc is not None:
        meta = dict(doc.template_variables.get("meta") or {})
        meta["viewport"] = VIEWPORT
        doc.template_variables["meta"] = meta


def objectives_html(objectives: Sequence[str]) -> str:
    """An episode's learning objectives (trusted package text) as the one line under its title."""
    if not objectives:
        return ""
    said = "; ".join(objectives[:-1]) + ("; and " if len(objectives) > 1 else "") + objectives[-1]
    return f'<p class="sdp-objectives"><strong>After this episode you can</strong> {said}.</p>'


def episode_shell(*, number: int, title: str, lede: str | Callable[..., str], try_this: str,
                  body: Sequence, name: str, objectives: Sequence[str] = (),
                  neighbours: tuple[EpisodeRef | None, ...] = (None, None),
                  ) -> pn.Column:
    """Wrap an episode's body in the common page shell.

    ``lede`` and ``try_this`` are trusted package text (may contain simple HTML); a lede
    that states a control's value is a function bound to it (``pn.bind``), so it follows
    the control. ``objectives`` complete "After this episode you can", in one line under the
    title. ``neighbours`` are the episodes before and after this one, for the navigation (and
    a third, the next in number, where the one after is the next on the short path).
    """
    heading = (f'<p class="sdp-kicker">Speculative Decoding, Playable · Episode {number}</p>'
               f'<h1 class="sdp-title">{esc(title)}</h1>{objectives_html(objectives)}')
    try_html = f'<div class="sdp-try"><strong>Try this:</strong> {try_this}</div>'
    if isinstance(lede, str):
        header = prose(heading + _lede(lede) + try_html, name=f"{name}-header")
    else:
        header = pn.Column(prose(heading), prose(pn.bind(_lede, lede), name=f"{name}-lede"),
                           prose(try_html), name=f"{name}-header", sizing_mode="stretch_width")

    from .site.course import SHORT_PATH  # the site's pages build on this module

    def nav():
        return prose(nav_html(*neighbours, path_ends=number == SHORT_PATH[-1]))

    declare_viewport()
    from .parts import finish_part  # parts builds on this module's helpers

    body = [finish_part(part) for part in body]
    return pn.Column(
        nav(), header, *body, nav(), AccessibleNames(), FragmentTarget(), FigureSaver(),
        name=name, sizing_mode="stretch_width", max_width=1100,
        styles={"margin": "0 auto", "padding": "8px 16px 32px 16px"},
        stylesheets=[theme_css(), page_css()],
    )


def site_shell(body: str, *extra_css: str, name: str) -> pn.Column:
    """A page of the site that is not an episode (the index, the summary, the glossary): the
    navigation, ``body`` (trusted package HTML) in the page's style, and the navigation again."""
    declare_viewport()
    nav = f'<nav class="sdp-nav" aria-label="Site"><a href="./">← All episodes</a>' \
          f'<a href="{SUMMARY_HREF}">Summary</a><a href="{GLOSSARY_HREF}">Glossary</a>' \
          f'<a href="{GUIDE_HREF}">Teacher’s guide</a></nav>'
    return pn.Column(
        pn.pane.HTML(nav, stylesheets=[page_css()], sizing_mode="stretch_width"),
        pn.pane.HTML(body, stylesheets=[page_css(*extra_css)], sizing_mode="stretch_width",
                     name=f"{name}-body"),
        FragmentTarget(),
        name=name, sizing_mode="stretch_width", max_width=1100, stylesheets=[theme_css(), page_css()],
        styles={"margin": "0 auto", "padding": "8px 16px 32px 16px"})


def session_doc():
    """The Bokeh document of the server session being built, or None (a notebook, a test)."""
    doc = pn.state.curdoc
    return doc if doc is not None and doc.session_context is not None else None


def watch_connection() -> None:
    """Have the served page being built say when its connection to the server drops: a banner
    at the top with a reload button (``static/connection.js``, on Bokeh's ``connection_lost``
    event); nothing outside a server session."""
    from bokeh.models import CustomJS

    from . import theme
    from .resources import script

    doc = session_doc()
    if doc is None:
        return
    hook = CustomJS(args=dict(colors=dict(ink=theme.INK, notice=theme.NOTICE, line=theme.NOTICE_LINE,
                                          paper=theme.PAPER)),
                    code=script("connection.js"))
    for event in ("connection_lost", "client_reconnected"):
        doc.js_on_event(event, hook)


