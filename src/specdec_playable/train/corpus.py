"""Stage 1, the corpus: where the training text comes from, its licences, the check that no
held-out text leaks into it, and its held-out split.

Two kinds of source:

- **Documents** from this machine, mixed across genres: Python (the standard library, PSF-2.0; a
  few site-packages, licences read from their metadata), and JavaScript, package.json files and
  READMEs from ``tooling/node_modules`` (each package's licence from its package.json). Whole
  files are split between training and a held-out split by a seeded draw.
- **The model's own replies** (self-distillation): the replies this CPU writes to the prompts of
  :mod:`.chat_prompts` (:mod:`.replies`), and the corpus of 11,479 greedy replies written on a GPU
  (``shared/data/selfdistill/smollm2_replies.npz``, :func:`read_selfdistill`). Replies are split
  **by prompt**: every reply to one prompt lands on the same side.

Episode 4's six texts and every prompt of ``lm/prompts.py`` are held out: no 64-character window
of them may occur in the corpus (:func:`assert_no_overlap`, :func:`overlapping_rows`).

About a third of the self-distillation replies end in a loop (a 135M model's greedy text does
that): :func:`loop_start` finds where, :func:`cut_loop` cuts there and :func:`loop_weights`
weights the loop down instead.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..lm.prompts import CODE, EVERY, PASSAGE, RECORD, SENTENCE, TABLE
from ..shipped import asset_path

DOC_TOKENS_MAX = 768
HELD_OUT_SHARE = 0.04
#: Tokens per genre (the chat genre is whatever the prompts of :mod:`.chat_prompts` produce).
BUDGETS = {"python": 60_000, "javascript": 36_000, "json": 22_000, "prose": 36_000}
SITE_PACKAGES = ("numpy", "param", "bokeh", "panel", "jinja2", "click", "markdown", "narwhals",
                 "hypothesis")
WINDOW = 64
#: The licence of the model's own replies (this CPU's and the GPU corpus's).
REPLY_LICENCE = "model output (SmolLM2-135M-Instruct, Apache-2.0 model)"


@dataclass(frozen=True)
class Doc:
    genre: str
    source: str
    licence: str
    text: str


# ------------------------------------------------------------------------------------ documents

def _dist_licence(dist: str) -> str:
    try:
        md = importlib.metadata.metadata(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    lic = md.get("License-Expression") or md.get("License") or ""
    if not lic or len(lic) > 60:
        lic = next((c.split("::")[-1].strip() for c in md.get_all("Classifier") or []
                    if c.startswith("License ::")), lic[:60] or "unknown")
    return lic


def python_docs() -> list[Doc]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    docs = [Doc("python", f"stdlib/{p.relative_to(lib)}", "PSF-2.0", p.read_text("utf-8", "replace"))
            for p in sorted(lib.glob("*.py")) + sorted(lib.glob("*/*.py"))
            if "test" not in str(p.relative_to(lib)) and "idlelib" not in str(p)]
    site = Path(sysconfig.get_paths()["purelib"])
    for pkg in SITE_PACKAGES:
        for p in sorted((site / pkg).rglob("*.py")):
            if "test" not in str(p.relative_to(site)):
                docs.append(Doc("python", f"site-packages/{p.relative_to(site)}", _dist_licence(pkg),
                                p.read_text("utf-8", "replace")))
    return docs


def _npm_licence(path: Path, top: Path) -> str:
    for d in path.parents:
        pj = d / "package.json"
        if pj.is_file():
            try:
                lic = json.loads(pj.read_text("utf-8")).get("license", "unknown")
            except ValueError:
                continue
            return lic if isinstance(lic, str) else json.dumps(lic)
        if d == top:
            break
    return "unknown"


def node_docs(top: Path) -> list[Doc]:
    if not top.is_dir():
        print(f"note: no {top}; the JavaScript, JSON and README genres are left out")
        return []
    docs = []
    for genre, pattern in (("javascript", "*.js"), ("json", "*.json"), ("prose", "README.md")):
        for p in sorted(top.rglob(pattern)):
            if not p.is_file() or p.stat().st_size > 200_000 or ".min." in p.name:
                continue
            docs.append(Doc(genre, f"node_modules/{p.relative_to(top)}", _npm_licence(p, top),
                            p.read_text("utf-8", "replace")))
    return docs


def pick_docs(docs: list[Doc], tok, budgets: dict, rng) -> tuple[list, list]:
    """Per genre, a seeded draw of whole files up to its token budget, and a held-out split.

    Returns (train, held) lists of ``(doc, ids)`` with ids cut to DOC_TOKENS_MAX.
    """
    train, held = [], []
    for genre, budget in budgets.items():
        pool = [d for d in docs if d.genre == genre]
        got = 0
        for i in rng.permutation(len(pool)):
            if got >= budget * (1 + HELD_OUT_SHARE):
                break
            ids = tok.encode(pool[i].text)[:DOC_TOKENS_MAX]
            if len(ids) < 32:
                continue
            (held if rng.random() < HELD_OUT_SHARE else train).append((pool[i], ids))
            got += len(ids)
    return train, held


# ------------------------------------------------------------------------------ held-out texts

def episode4_texts() -> dict[str, str]:
    """Episode 4's six measured texts, by id."""
    texts = json.loads(asset_path("lm/measured_texts.json").read_text("utf-8"))["texts"]
    return {t["id"]: t["source"] for t in texts}


def held_out_strings() -> dict[str, str]:
    """Episode 4's six texts and every prompt the pages, tests and benchmarks share."""
    out = {f"episode 4: {name}": src for name, src in episode4_texts().items()}
    out.update({f"prompt: {name}": t.message for name, t in EVERY.items()})
    out.update({"CODE": CODE, "PASSAGE": PASSAGE, "RECORD": RECORD, "SENTENCE": SENTENCE,
                "TABLE": TABLE})
    return out


def _windows(text: str) -> list[str]:
    """The 64-character windows of ``text`` the overlap check looks for (every 16th start)."""
    return [text[s:s + WINDOW] for s in range(0, max(1, len(text) - WINDOW + 1), 16)]


def assert_no_overlap(docs: list[Doc], prompts) -> None:
    """No 64-character window (every 16th start) of a held-out text occurs in the corpus."""
    held = held_out_strings()
    big = "\x00".join(d.text for d in docs) + "\x00" + "\x00".join(prompts)
    for name, text in held.items():
        hits = [w for w in _windows(text) if w in big]
        assert not hits, f"held-out {name} overlaps the training corpus: {hits[0]!r}"
    for p in prompts:
        assert p not in held.values(), f"chat prompt {p!r} is a held-out prompt"


def overlapping_rows(texts: list[str]) -> dict[int, str]:
    """The rows of ``texts`` (a prompt and its reply, as text) that hold a 64-character window of a
    held-out text or are a held-out prompt, with the held-out text's name: rows to drop."""
    held = held_out_strings()
    big = "\x00".join(texts)
    starts = np.cumsum([0] + [len(t) + 1 for t in texts])
    out = {}
    for name, text in held.items():
        for w in _windows(text):
            at = big.find(w)
            while at >= 0:
                out.setdefault(int(np.searchsorted(starts, at, "right") - 1), name)
                at = big.find(w, at + 1)
    whole = set(held.values())
    out.update({i: "a held-out prompt" for i, t in enumerate(texts) if t in whole})
    return out


# ------------------------------------------------------------------------------ the split by prompt

def normal_prompt(text: str) -> str:
    """A prompt as the split compares it: case and runs of white space ignored."""
    return " ".join(text.lower().split())


def prompt_share(text: str, seed: int = 0) -> float:
    """A stable number in [0, 1) per prompt (equal for prompts equal under :func:`normal_prompt`)."""
    key = hashlib.sha256(f"{seed}|{normal_prompt(text)}".encode()).digest()
    return int.from_bytes(key[:8], "big") / 2 ** 64


def split_by_prompt(prompts, share: float, seed: int = 0) -> np.ndarray:
    """Which rows are held out: those whose prompt's :func:`prompt_share` is below ``share``.

    Every row with the same prompt gets the same answer, so no prompt is on both sides.
    """
    if not 0.0 <= share < 1.0:
        raise ValueError(f"share must be in [0, 1); got {share}")
    return np.array([prompt_share(p, seed) < share for p in prompts], bool)


def hash_share(doc: Doc, ids) -> float:
    """A stable number in [0, 1) per prompt of this CPU's replies (both replies of a prompt get
    the same one: the key is the chat template and prompt at their start)."""
    key = hashlib.sha256(json.dumps(list(ids[:40])).encode()).digest()
    return int.from_bytes(key[:4], "big") / 2 ** 32


def corpus_summary(train, held) -> dict:
    genres = {}
    for side, items in (("train", train), ("held", held)):
        for doc, ids in items:
            g = genres.setdefault(doc.genre, dict(train_tokens=0, held_tokens=0, files=0,
                                                  licences={}))
            g[f"{side}_tokens"] += len(ids)
            g["files"] += 1
            g["licences"][doc.licence] = g["licences"].get(doc.licence, 0) + len(ids)
    return dict(genres=genres, train_tokens=sum(len(i) for _, i in train),
                held_tokens=sum(len(i) for _, i in held),
                train_files_sha256=hashlib.sha256("\n".join(d.source for d, _ in train).encode()
                                                  ).hexdigest())


# ------------------------------------------------------------------------------ loops

#: A loop: a period of at most ``MAX_PERIOD`` tokens, repeated to the end of the reply, spanning
#: at least ``LOOP_COPIES`` copies and ``LOOP_TOKENS`` tokens (one copy of the unit included).
MAX_PERIOD, LOOP_COPIES, LOOP_TOKENS = 64, 3, 32


def loop_start(ids, *, max_period: int = MAX_PERIOD, min_copies: int = LOOP_COPIES,
               min_tokens: int = LOOP_TOKENS, tolerance: float = 0.0) -> int:
    """Where a reply's loop starts: the first token that only copies the token ``p`` before it,
    in a run of such copies that reaches the end (``len(ids)`` when there is no loop).

    The text before it keeps one copy of the repeated unit. Of every period ``p`` up to
    ``max_period`` whose repetition spans at least ``min_copies`` copies and ``min_tokens``
    tokens, the one that starts copying earliest wins. With ``tolerance`` > 0 a copy may differ
    from the token ``p`` before it at up to that share of the run's positions (a counter in a
    repeated line: "16. **Seychelles**", "17. **Seychelles**").

    Examples
    --------
    >>> loop_start([5, 6, 7] + [1, 2] * 20)
    5
    >>> loop_start([5, 6, 7, 8])
    4
    """
    x = np.asarray(ids)
    n = int(x.size)
    best = n
    for p in range(1, min(max_period, n // max(1, min_copies)) + 1):
        same = x[p:] == x[:-p]  # same[i]: x[i + p] copies x[i]
        periodic_from = _copying_run(same, tolerance)
        span = n - periodic_from
        if span >= min_copies * p and span >= min_tokens:
            best = min(best, periodic_from + p)
    return best


def _copying_run(same: np.ndarray, tolerance: float) -> int:
    """The first index of the longest run of ``same`` reaching its end with at most
    ``tolerance`` of it False, starting on a True (``same.size`` if none)."""
    if tolerance <= 0.0:
        differ = np.flatnonzero(~same)
        return int(differ[-1]) + 1 if differ.size else 0
    misses = np.cumsum((~same)[::-1])[::-1]  # misses[j]: False entries in same[j:]
    ok = same & (misses <= tolerance * (same.size - np.arange(same.size)))
    return int(np.flatnonzero(ok)[0]) if ok.any() else int(same.size)


def cut_loop(ids, **kw) -> np.ndarray:
    """``ids`` up to where its loop starts (:func:`loop_start`); unchanged without a loop."""
    x = np.asarray(ids)
    return x[:loop_start(x, **kw)]


def loop_weights(ids, down: float = 0.1, **kw) -> np.ndarray:
    """A training weight per token: 1, and ``down`` from where the loop starts (all 1 without one)."""
    if not 0.0 <= down <= 1.0:
        raise ValueError(f"down must be in [0, 1]; got {down}")
    w = np.ones(len(ids), np.float32)
    w[loop_start(ids, **kw):] = down
    return w


# ------------------------------------------------------------------------------ the GPU corpus

@dataclass(frozen=True)
class SelfDistill:
    """The self-distillation corpus (``smollm2_replies.npz``): row ``i`` is the model's greedy
    reply ``replies[i]`` (uint16 ids, without the closing ``<|im_end|>``) to ``prompts[i]``;
    ``finished[i]``: the reply closed with ``<|im_end|>`` before the 320-token cap; ``source[i]``:
    0 templated prompt, 1 a prompt the model wrote itself."""

    prompts: tuple[str, ...]
    replies: tuple[np.ndarray, ...]
    finished: np.ndarray
    source: np.ndarray

    def __len__(self) -> int:
        return len(self.prompts)

    def row_ids(self, tok, i: int, *, cut: bool) -> np.ndarray:
        """Row ``i`` as the model read it: the chat template and prompt, the reply and its
        ``<|im_end|>`` (if it closed), cut where its loop starts with ``cut``."""
        reply = self.replies[i].astype(np.int64)
        if cut:
            reply = cut_loop(reply)
        end = [tok.im_end] if self.finished[i] and reply.size == self.replies[i].size else []
        return np.concatenate([np.asarray(tok.chat(self.prompts[i]), np.int64), reply,
                               np.asarray(end, np.int64)])


def read_selfdistill(path) -> SelfDistill:
    """Read ``smollm2_replies.npz`` (layout in ``shared/data/README.md``)."""
    with np.load(path) as z:
        raw, uo = z["user_utf8"].tobytes(), z["user_offsets"]
        reply, off = z["reply"], z["offsets"]
        finished, source = z["finished"].astype(bool), z["source"].astype(np.uint8)
    prompts = tuple(raw[uo[i]:uo[i + 1]].decode("utf-8") for i in range(uo.size - 1))
    replies = tuple(reply[off[i]:off[i + 1]] for i in range(off.size - 1))
    if not len(prompts) == len(replies) == finished.size == source.size:
        raise ValueError(f"{path}: {len(prompts)} prompts, {len(replies)} replies, "
                         f"{finished.size} finished flags, {source.size} sources")
    return SelfDistill(prompts, replies, finished, source)


def selfdistill_rows(sd: SelfDistill, *, held_share: float, seed: int = 0,
                     rows: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The training rows and the held-out rows, split by prompt (:func:`split_by_prompt`), each
    in a seeded order of their own prompts' hashes, so the first ``rows`` training rows (all
    with 0) are a prefix of any larger choice: features cached for them serve a bigger run."""
    held = split_by_prompt(sd.prompts, held_share, seed)
    order = np.argsort([prompt_share(p, seed + 1) for p in sd.prompts], kind="stable")
    train_rows, held_rows = order[~held[order]], order[held[order]]
    return (train_rows[:rows] if rows else train_rows), held_rows


def selfdistill_items(sd: SelfDistill, tok, rows, *, cut: bool, drop=()) -> list[tuple[Doc, np.ndarray]]:
    """``(doc, ids)`` of the given rows (:meth:`SelfDistill.row_ids`), leaving out ``drop``."""
    gone = set(drop)
    kind = ("templated", "model-written")
    return [(Doc("selfdistill", f"selfdistill/{kind[int(sd.source[i])]}/{i}", REPLY_LICENCE, ""),
             sd.row_ids(tok, int(i), cut=cut)) for i in rows if int(i) not in gone]


def selfdistill_overlap(sd: SelfDistill, tok, rows=None) -> dict[int, str]:
    """The rows (of ``rows``; all by default) whose prompt or reply holds a window of a held-out
    text (:func:`overlapping_rows`), with its name."""
    rows = np.arange(len(sd)) if rows is None else np.asarray(rows)
    texts = [sd.prompts[i] + "\x00" + tok.decode([int(t) for t in sd.replies[i]]) for i in rows]
    return {int(rows[j]): name for j, name in overlapping_rows(texts).items()}


def reply_tokens(sd: SelfDistill, rows, *, cut: bool) -> np.ndarray:
    """The reply tokens of ``rows``, one array, each cut where its loop starts with ``cut``."""
    parts = [cut_loop(sd.replies[int(i)]) if cut else sd.replies[int(i)] for i in rows]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


# ------------------------------------------------------------------------------ statistics

def loop_stats(sd: SelfDistill, rows=None, **kw) -> dict:
    """Rows and reply tokens of ``rows`` (all by default), before and after cutting loops
    (``kw``: :func:`loop_start`'s)."""
    rows = np.arange(len(sd)) if rows is None else np.asarray(rows)
    lens = np.array([sd.replies[i].size for i in rows], np.int64)
    starts = np.array([loop_start(sd.replies[i], **kw) for i in rows], np.int64)
    loops = starts < lens
    return dict(rows=int(rows.size), reply_tokens=int(lens.sum()), rows_with_loops=int(loops.sum()),
                tokens_kept_after_cut=int(starts.sum()),
                loop_tokens_cut=int((lens - starts).sum()),
                rows_with_loops_by_source={name: int((loops & (sd.source[rows] == s)).sum())
                                           for s, name in enumerate(("templated", "model-written"))})


def readout_coverage(train_tokens: np.ndarray, held_tokens: np.ndarray, n_vocab: int = 8192) -> float:
    """Share of ``held_tokens`` inside the ``n_vocab`` most frequent tokens of ``train_tokens``
    (what a readout over those tokens could ever guess right)."""
    counts = np.bincount(np.asarray(train_tokens, np.int64))
    top = np.argsort(-counts, kind="stable")[:n_vocab]
    top = top[counts[top] > 0]
    return float(np.isin(np.asarray(held_tokens, np.int64), top).mean()) if len(held_tokens) else 0.0
