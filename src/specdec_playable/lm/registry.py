"""The drafts the project offers, one record each: what pages, the CLI and the benchmarks read.

A :class:`DraftSpec` names a draft once: its key (what results, links and the CLI carry), its label
and what it is in a few words, and how to make one. :func:`draft_spec` finds a spec by its key or
an older name (``"learned"`` is the n-gram table's name in links and recordings made before it
was called ``"ngram"``), so old links keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .drafts import Draft, EarlyExit, PromptLookup
from .head import DraftHead
from .hybrid import HybridDraft
from .memory import MemoryDraft
from .ngram import NgramDraft


@dataclass(frozen=True)
class DraftSpec:
    """One draft as the project offers it.

    Attributes
    ----------
    key : str
        Its name in results, links and the CLI (``Generation.draft``).
    label : str
        Its name on a page ("Prompt lookup").
    what : str
        What it is, in a few words ("copies from the prompt").
    make : callable
        A fresh draft object with its default settings.
    aliases : tuple of str
        Older names that still find it.
    article : str
        The article its name takes in running text ("the n-gram table"), or "".

    Examples
    --------
    >>> draft_spec("learned").key
    'ngram'
    >>> draft_spec("lookup").menu_label
    'Prompt lookup (copies from the prompt)'
    """

    key: str
    label: str
    what: str
    make: Callable[[], Draft]
    aliases: tuple[str, ...] = ()
    article: str = ""

    @property
    def menu_label(self) -> str:
        """The label with what it is, as a menu offers it."""
        return f"{self.label} ({self.what})"

    @property
    def short(self) -> str:
        """The label in running text ("prompt lookup")."""
        return self.label[0].lower() + self.label[1:]

    @property
    def subject(self) -> str:
        """The name as a sentence's subject, with its article ("The n-gram table", "Prompt lookup").

        >>> draft_spec("ngram").subject, draft_spec("lookup").subject
        ('The n-gram table', 'Prompt lookup')
        """
        return f"{self.article.capitalize()} {self.short}" if self.article else self.label


#: Every draft, in the order pages and the CLI offer them.
DRAFTS: dict[str, DraftSpec] = {s.key: s for s in (
    DraftSpec("lookup", "Prompt lookup", "copies from the prompt", PromptLookup),
    DraftSpec("ngram", "N-gram table", "trained on Python source", NgramDraft, aliases=("learned",),
              article="the"),
    DraftSpec("head", "Draft head", "trained to imitate the model", DraftHead,
              article="the"),
    DraftSpec("memory", "Memory draft", "the model's own past replies, no network", MemoryDraft,
              article="the"),
    DraftSpec("hybrid", "Memory + head", "memory where past replies agree, else the head",
              HybridDraft),
    DraftSpec("early-exit", "Early exit", "the model's first 6 of 30 blocks, untrained", EarlyExit),
)}
_NAMES = {name: s for s in DRAFTS.values() for name in (s.key, *s.aliases)}


def draft_spec(name: str) -> DraftSpec:
    """The spec of a draft by its key or an older name; ``ValueError`` names the choices."""
    try:
        return _NAMES[name]
    except (KeyError, TypeError):
        raise ValueError(f"draft must be one of {list(DRAFTS)}; got {name!r}") from None


def draft_key(name: str) -> str:
    """A draft's key from its key or an older name."""
    return draft_spec(name).key


def make_draft(name: str) -> Draft:
    """A fresh draft by its key or an older name."""
    return draft_spec(name).make()
