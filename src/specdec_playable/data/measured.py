"""The real model's measured numbers for Episodes 4 and 6, read from the shipped asset.

``scripts/score_texts.py`` scored every bundled text with SmolLM2-135M-Instruct (the target) and
the draft head (and, for Episode 6's race, the learned n-gram draft), teacher-forced, and wrote
``assets/lm/measured_texts.json``: per token (a subword piece of the model's tokenizer) the
acceptance probability ``sum(min(p, q))``, whether greedy drafting is kept, the target's
probability of the token and the draft's guess; and, for a few contexts, both models' most likely
next tokens (the draft head's). Provenance is in
``assets/lm/measured_texts.meta.json``.

This module needs no model: it turns the asset into :class:`data.texts.Text` records (each token's
``q`` is its measured acceptance), streams for the adaptive race, histograms and genre means, and
the small categorical distributions of Episode 6's sampling check. Everything returned is
read-only and cached, so sessions share it.

Examples
--------
>>> t = measured_text("js-loop")
>>> t.source == load_measured().texts["js-loop"].source
True
>>> bool(((t.q >= 0) & (t.q <= 1)).all())
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field

import numpy as np

from ..lm.registry import draft_key
from ..shipped import asset_path
from ..sim import validate as _v
from ..sim.adaptive import Stream, stream_of
from .texts import Text

ASSET = "lm/measured_texts.json"
META = "lm/measured_texts.meta.json"
#: Decimal places kept in the asset.
DIGITS = 4
#: Episode 6's contexts: the model's next token after each is the distribution p of part 1.
CONTEXTS = ("The cat sat on the", "Thank you for your", "    def __init__(self")
#: Order of kinds, as Episode 4 lists them.
KIND_ORDER = ("code", "json", "letter", "translation", "poem", "python")
#: The label of the category that gathers every token not listed.
REST = "everything else"
#: Equal-width bins of acceptance for the histograms.
BINS = 10
#: Held-out Python: the opening of ``assets/lm/heldout_python.txt`` (lines kept).
PYTHON_LINES = 20


def python_text() -> dict:
    """The held-out Python text (code like both drafts' training text, but not in it)."""
    lines = asset_path("lm/heldout_python.txt").read_text(encoding="utf-8").splitlines(True)
    return dict(
        id="py-account", title="Python code (held out)", kind="python",
        description="A small Python class, held out from the drafts' training text: Python is "
                    "the one language the n-gram table learned from, and one of the head's.",
        source="".join(lines[:PYTHON_LINES]), origin="assets/lm/heldout_python.txt")


@dataclass(frozen=True, eq=False)
class MeasuredText:
    """One scored text from the asset. Arrays are read-only, one entry per token.

    Attributes
    ----------
    id, title, kind, description, source : str
    pieces : tuple of str
        The model's tokens as text (they join to ``source``).
    alpha : numpy.ndarray
        Measured acceptance probability ``sum(min(p, q))`` of each token.
    greedy : numpy.ndarray of bool
        Whether greedy drafting is kept at each token.
    p_token : numpy.ndarray
        The target's probability of each token.
    guess : tuple of str
        The draft's most likely token at each position ("" where it proposes nothing).
    compare : dict
        Per draft measured on the text (``head``, ``learned``, ``lookup``, ``memory``,
        ``hybrid``): ``alpha`` (mean
        sum(min(p, q))), ``greedy`` (share where its first greedy guess is kept) and ``tau``
        (tokens per target pass of a greedy round at k = 4 starting at each token).
    learned : dict
        The n-gram table's own ``alpha``, ``greedy`` and ``guess`` per token (Episode 6 plays
        them), read-only.
    match : numpy.ndarray of int
        Per token, the length of the stretch just before it that the memory draft matches
        (Episode 6's match-length policy reads it); read-only, empty where not measured.
    """

    id: str
    title: str
    kind: str
    description: str
    source: str
    pieces: tuple[str, ...]
    alpha: np.ndarray
    greedy: np.ndarray
    p_token: np.ndarray
    guess: tuple[str, ...]
    compare: dict = field(default_factory=dict)
    learned: dict = field(default_factory=dict)
    match: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.pieces)

    @property
    def mean_alpha(self) -> float:
        return float(self.alpha.mean())

    @property
    def greedy_rate(self) -> float:
        return float(self.greedy.mean())


@dataclass(frozen=True, eq=False)
class Context:
    """Both models' next-token view after one context (Episode 6, part 1).

    ``labels`` are the target's top tokens (the first ``n_target``), then the draft's other tokens, then
    :data:`REST`; ``p`` and ``q`` are the target's and the draft's probabilities of each (read-only,
    each summing to 1). The draft is the draft head kept to its 16 most likely tokens
    (renormalised; ``draft_top_mass`` is the share of its q they held), so speculative sampling
    over these categories is the full-vocabulary process with its output grouped: a drafted token
    is always a listed one, and a rejected draft is replaced from ``max(p - q, 0)``, which gives
    the last category its whole mass ``p``. ``alpha`` is that draft's acceptance; ``alpha_full``
    the whole head's.
    """

    context: str
    labels: tuple[str, ...]
    p: np.ndarray
    q: np.ndarray
    alpha: float
    n_target: int
    draft_top_mass: float = 1.0
    alpha_full: float = float("nan")


@dataclass(frozen=True, eq=False)
class Measured:
    texts: dict
    contexts: dict
    meta: dict


def _learned(rec: dict) -> dict:
    n = len(rec["pieces"])
    got = rec["learned"]
    if any(len(got[k]) != n for k in ("alpha", "greedy", "guess")):
        raise ValueError(f"{ASSET}: text {rec.get('id')!r} has inconsistent n-gram columns")
    return dict(alpha=_ro(np.clip(got["alpha"], 0.0, 1.0)), greedy=_ro(got["greedy"], bool),
                guess=tuple(got["guess"]))


def _ro(values, dtype=float) -> np.ndarray:
    a = np.array(values, dtype=dtype)
    a.setflags(write=False)
    return a


def _context(rec: dict) -> Context:
    labels = [t for t, _ in rec["target"]]
    p = [v for _, v in rec["target"]]
    q = [0.0] * len(labels)
    for tok, qv, pv in rec["draft"]:
        if tok in labels:
            q[labels.index(tok)] = qv
        else:
            labels.append(tok)
            p.append(pv)
            q.append(qv)
    labels.append(REST)
    p.append(max(0.0, 1.0 - sum(p)))
    q.append(max(0.0, 1.0 - sum(q)))
    p_arr = np.array(p) / sum(p)
    q_arr = np.array(q) / sum(q)
    return Context(rec["context"], tuple(labels), _ro(p_arr), _ro(q_arr), float(rec["alpha"]),
                   len(rec["target"]), float(rec.get("draft_top_mass", 1.0)),
                   float(rec.get("alpha_full", rec["alpha"])))


def _match(rec: dict) -> np.ndarray:
    """A text's per-token match lengths (empty where the asset has none), checked."""
    m = _ro(rec.get("match", []), np.int64)
    if m.size and (m.shape != (len(rec["pieces"]),) or (m < 0).any()):
        raise ValueError(f"{ASSET}: text {rec['id']!r} has match lengths that do not fit it")
    return m


def match_lengths(ids: tuple[str, ...], repeats: int = 1) -> np.ndarray:
    """The measured texts ``ids`` back to back (each ``repeats`` times, as
    :func:`measured_stream` lays them out): per token, how long a stretch just before it the
    memory draft matches (read-only)."""
    texts = load_measured().texts
    parts = [texts[i].match for i in ids for _ in range(repeats)]
    if any(p.size == 0 for p in parts):
        raise ValueError(f"{ASSET} holds no match lengths for some of {list(ids)}")
    out = np.concatenate(parts)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=1)
def load_measured() -> Measured:
    """The asset, validated and cached (every array read-only)."""
    data = json.loads(asset_path(ASSET).read_text(encoding="utf-8"))
    meta = json.loads(asset_path(META).read_text(encoding="utf-8"))
    out = {}
    for rec in data["texts"]:
        n = len(rec["pieces"])
        cols = [rec[k] for k in ("alpha", "greedy", "p_token", "guess")]
        if any(len(c) != n for c in cols) or "".join(rec["pieces"]) != rec["source"]:
            raise ValueError(f"{ASSET}: text {rec.get('id')!r} is inconsistent")
        alpha = _ro(rec["alpha"])
        if not ((alpha >= 0) & (alpha <= 1)).all():
            raise ValueError(f"{ASSET}: text {rec['id']!r} has an acceptance outside [0, 1]")
        out[rec["id"]] = MeasuredText(
            id=rec["id"], title=rec["title"], kind=rec["kind"], description=rec["description"],
            source=rec["source"], pieces=tuple(rec["pieces"]), alpha=alpha,
            greedy=_ro(rec["greedy"], bool), p_token=_ro(rec["p_token"]), guess=tuple(rec["guess"]),
            compare={draft_key(d): dict(v) for d, v in rec.get("compare", {}).items()},
            learned=_learned(rec) if "learned" in rec else {},
            match=_match(rec))
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    ordered = dict(sorted(out.items(), key=lambda kv: (rank.get(kv[1].kind, len(rank)), kv[0])))
    contexts = {rec["context"]: _context(rec) for rec in data["contexts"]}
    return Measured(texts=ordered, contexts=contexts, meta=meta)


def text_ids() -> tuple[str, ...]:
    """Ids of the measured texts, in page order."""
    return tuple(load_measured().texts)


def _decoys(m) -> tuple[str, ...]:
    """What the draft proposed where it is rejected: its top guess when that differs from the
    token, else "" (its guess was the token, and sampling rejected it)."""
    return tuple(g if g != piece else "" for g, piece in zip(m.guess, m.pieces))


def as_text(m, *, id: str | None = None, title: str | None = None, kind: str | None = None,
            description: str | None = None) -> Text:
    """A measured text (from the asset or scored live) as a :class:`Text` for the relay.

    Each token's ``q`` is its measured acceptance probability.
    """
    return Text(
        id=id or m.id, title=title or m.title, kind=kind or m.kind,
        description=description or m.description, tokens=tuple(m.pieces), q=m.alpha,
        decoys=_decoys(m))


#: The drafts a text's per-token numbers exist for: Episode 4's draft head, and the n-gram table
#: Episode 6 plays (the asset keeps the n-gram table's columns under its old name, "learned").
DRAFTS = ("head", "ngram")


@functools.lru_cache(maxsize=None)
def measured_text(id: str, draft: str = "head") -> Text:
    """A bundled text with its measured per-token acceptance for ``draft`` (one of
    :data:`DRAFTS`), as a :class:`Text` (cached)."""
    ids = text_ids()
    if id not in ids:
        raise ValueError(f"text id must be one of {list(ids)}; got {id!r}")
    try:
        draft = draft_key(draft)  # an older name of a draft finds it
    except ValueError:
        pass
    if draft not in DRAFTS:
        raise ValueError(f"draft must be one of {DRAFTS}; got {draft!r}")
    m = load_measured().texts[id]
    if draft == "ngram":
        m = dataclasses.replace(m, alpha=m.learned["alpha"], greedy=m.learned["greedy"],
                                guess=m.learned["guess"])
    return as_text(m)


def measured_texts() -> tuple[Text, ...]:
    return tuple(measured_text(i) for i in text_ids())


def histogram(alpha, bins: int = BINS) -> np.ndarray:
    """Share of tokens in each of ``bins`` equal bins of acceptance over [0, 1] (1 in the last).

    Examples
    --------
    >>> histogram([0.0, 0.05, 0.5, 1.0], bins=2).tolist()
    [0.5, 0.5]
    """
    a = _v.real_array("alpha", alpha, 0.0, 1.0)
    bins = _v.integer("bins", bins, 1, 100)
    if a.size == 0:
        return np.zeros(bins)
    counts, _ = np.histogram(a, bins=bins, range=(0.0, 1.0))
    return counts / a.size


def genre_means() -> dict[str, dict[str, float]]:
    """Per text: mean measured acceptance, share kept by greedy drafting, mean p of the token."""
    return {i: dict(kind=m.kind, tokens=len(m), alpha=m.mean_alpha, greedy=m.greedy_rate,
                    p_token=float(m.p_token.mean()), compare=m.compare)
            for i, m in load_measured().texts.items()}


@functools.lru_cache(maxsize=16)
def measured_stream(ids: tuple[str, ...], repeats: int = 1, draft: str = "head") -> Stream:
    """The measured texts ``ids`` back to back (each ``repeats`` times), for the adaptive race,
    each token's acceptance measured for ``draft``, with the memory draft's match lengths
    (:func:`match_lengths`) where the asset holds them for every text.

    Examples
    --------
    >>> s = measured_stream(("js-loop", "poem-kettle"))
    >>> [seg[0] for seg in s.segments], s.match.shape == (len(s),)
    (['code', 'poem'], True)
    """
    if isinstance(ids, str) or not ids:
        raise ValueError(f"ids must be a non-empty sequence of text ids; got {ids!r}")
    stream = stream_of([measured_text(tid, draft) for tid in ids], repeats)
    if all(load_measured().texts[tid].match.size for tid in ids):
        stream = dataclasses.replace(stream, match=match_lengths(tuple(ids), repeats))
    return stream


def context(text: str) -> Context:
    """Episode 6's measured context ``text`` (one of :data:`CONTEXTS`)."""
    contexts = load_measured().contexts
    if text not in contexts:
        raise ValueError(f"context must be one of {list(contexts)}; got {text!r}")
    return contexts[text]


def distort(q, temperature: float, bias: float, favourite: int) -> np.ndarray:
    """The draft's ``q`` bent: ``q ** (1 / temperature)`` renormalised over its support, then a
    share ``bias`` of its mass moved to category ``favourite``.

    ``temperature`` 1 and ``bias`` 0 give ``q`` back. Categories with ``q = 0`` stay at 0 unless
    chosen as the favourite.

    Examples
    --------
    >>> distort([0.5, 0.5, 0.0], 1.0, 0.5, 2).tolist()
    [0.25, 0.25, 0.5]
    >>> distort([0.8, 0.2], 0.5, 0.0, 0).round(3).tolist()
    [0.941, 0.059]
    """
    q = _v.real_array("q", q, 0.0, 1.0)
    t = _v.real("temperature", temperature, 0.05, 20.0)
    b = _v.real("bias", bias, 0.0, 1.0)
    fav = _v.integer("favourite", favourite, 0, q.size - 1)
    if not q.sum() > 0:
        raise ValueError("q must have some probability mass")
    bent = np.zeros_like(q)
    on = q > 0
    logq = np.log(q[on]) / t
    bent[on] = np.exp(logq - logq.max())
    bent /= bent.sum()
    out = (1.0 - b) * bent
    out[fav] += b
    return out / out.sum()


#: Pearson's test needs about this many expected draws in every category it compares.
MIN_EXPECTED = 5.0


def chi_square_pooled(observed, probs, min_expected: float = MIN_EXPECTED):
    """Pearson's chi-square of ``observed`` counts against ``probs``, with the categories expected
    fewer than ``min_expected`` times pooled into one (the usual rule for the test to hold).

    A count in a category of probability 0 is never pooled away: it still fails the test.

    Examples
    --------
    The two 1 % categories are pooled (2 expected draws, still too few), then joined to the 8 %
    one, which leaves two categories:

    >>> chi_square_pooled([90, 8, 1, 1], [0.9, 0.08, 0.01, 0.01]).df
    1
    """
    from ..sim.sampling import chi_square

    obs = np.asarray(observed, dtype=float)
    p = np.asarray(probs, dtype=float)
    n = obs.sum()
    small = (p > 0) & (p * n < min_expected)
    if small.sum() == 0:
        return chi_square(obs, p)
    keep = ~small
    pooled_p, pooled_o = p[small].sum(), obs[small].sum()
    kp, ko = list(p[keep]), list(obs[keep])
    if pooled_p * n < min_expected:
        live = [i for i, v in enumerate(kp) if v > 0]
        if live:  # still too small: join the least likely category kept
            j = min(live, key=lambda i: kp[i])
            kp[j] += pooled_p
            ko[j] += pooled_o
            pooled_p = pooled_o = 0.0
    if pooled_p > 0:
        kp.append(pooled_p)
        ko.append(pooled_o)
    return chi_square(np.array(ko), np.array(kp) / sum(kp))
