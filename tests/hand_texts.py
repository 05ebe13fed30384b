"""Hand-labelled texts, a test fixture: each token with how guessable it is for a small draft.

A text is a list of tokens, each carrying a probability ``q`` that a small
draft model guesses it right (its acceptance probability), a *tier* saying why (see :data:`TIERS`), and a
*decoy*: the plausible wrong word the draft would write when it misses.

The texts in ``tests/fixtures/texts/`` were written for this project and labelled by
hand with the tiers; ``tests/fixtures/texts/README.md`` documents the rule. Text a
visitor pastes is labelled by :func:`classify`, the automatic part of the same
rule (it can tell punctuation, keywords, repeats and function words apart, but
not an idiom or a poet's free choice).

Nothing here imports panel, bokeh or param. Loaded texts are cached and
immutable, so every session can share them.

Examples
--------
>>> t = text_from_paste("for (let i = 0; i < n; i++) {}")
>>> t.tokens[:4]
('for', ' (', 'let', ' i')
>>> t.source == "for (let i = 0; i < n; i++) {}"
True
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import re
import zlib
from pathlib import Path

import numpy as np

from specdec_playable.data.texts import KIND_ORDER, PASTE_MAX_CHARS, Text, check_paste
from specdec_playable.sim.adaptive import Stream, stream_of

#: The acceptance probability ``q`` of each tier, most to least predictable. The tier names are
#: the vocabulary of the rule in ``tests/fixtures/texts/README.md``.
TIERS: dict[str, float] = {
    "forced": 0.97,    # closing brackets/quotes, separators, 2nd half of a fixed pair
    "syntax": 0.92,    # keywords, operators, other punctuation, a repeated name
    "context": 0.85,   # all but fixed by earlier text: idiom, translation, convention
    "function": 0.65,  # common function words; one of two or three equal options
    "content": 0.35,   # other words and numbers: one of many reasonable choices
    "creative": 0.15,  # a writer's free choice: an image, a name, a specific value
}

#: Tiers the automatic rule (:func:`classify`) can assign.
AUTO_TIERS = ("forced", "syntax", "function", "content")

_TEXTS_DIR = Path(__file__).resolve().parent / "fixtures" / "texts"
_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_TOKEN_KEYS = {"text", "q", "decoy", "tier"}

# ---------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------

# A token is optional leading whitespace, then one of: a word (letter or
# underscore, then letters/digits/underscores), a run of digits, or a single
# other character. Whitespace at the very end of the text is a token of its
# own. Every character is whitespace, a word character or neither, so the
# alternatives cover any string and the tokens join back to it exactly.
_TOKEN_RE = re.compile(r"\s*(?:[^\W\d]\w*|\d+|[^\w\s])|\s+")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into tokens that carry their leading whitespace.

    Words, digit runs and single punctuation marks, brackets or operator
    characters are tokens; ``"".join(tokenize(s)) == s`` for every string.

    Examples
    --------
    >>> tokenize("i++;\\n  total += 10")
    ['i', '+', '+', ';', '\\n  total', ' +', '=', ' 10']
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string; got {type(text).__name__}")
    return _TOKEN_RE.findall(text)


def _split(token: str) -> tuple[str, str]:
    """``(leading whitespace, rest)`` of a token."""
    core = token.lstrip()
    return token[: len(token) - len(core)], core


# ---------------------------------------------------------------------------
# The automatic rule
# ---------------------------------------------------------------------------

_CLOSERS = frozenset(")]}")
_SEPARATORS = frozenset(";,:.!?")
_CLOSING_QUOTES = frozenset("”’»")
_AMBI_QUOTES = frozenset("\"'`")

#: Code keywords that are not everyday English function words (those are in
#: _FUNCTION_WORDS, so "for", "in", "if" count as function words everywhere).
_KEYWORDS = frozenset(
    """
    def elif lambda return function const let var null none true false
    undefined self this import class async await yield typeof instanceof
    while else try except catch finally raise throw new void int str float
    bool print range len console length push append pass break continue
    """.split()
)

_FUNCTION_WORDS = frozenset(
    """
    the a an of in on at to for from by with and or but so if as than then
    is are was were be been being am has have had do does did not no
    it its this that these those there here which who whom whose what when
    where how why i you he she we they me him her us them my your his our
    their will would can could should shall may might must all any some
    each every just also very up out into about over like only such
    s t re ll ve d m 0 1
    le la les de des du un une et est en au aux ce qui que pour dans sur pas
    der die das den dem des ein eine und ist im zu mit von nicht auf für
    el los las y es por con lo se
    """.split()
)


def _is_word(core: str) -> bool:
    return bool(core) and (core[0].isalnum() or core[0] == "_")


def classify(tokens) -> list[str]:
    """Tier of each token by the automatic rule (one of :data:`AUTO_TIERS`).

    First match wins:

    1. ``forced``: whitespace only, a closing bracket ``) ] }``, a closing
       quote (``” ’ »``, or a ``" ' `` that closes one opened earlier), or a
       separator ``; , : . ! ?``;
    2. ``syntax``: any other punctuation, bracket or operator character; a
       code keyword; a word that repeats (ignoring case) one seen earlier;
    3. ``function``: a common function word (English, some French, German,
       Spanish; and the digits 0 and 1; a lowercase ``i`` is a name, not "I");
    4. ``content``: every other word or number.

    Apostrophes inside words (``don't``) are ``syntax`` and open no quote.
    """
    toks = _check_token_list(tokens)
    tiers: list[str] = []
    seen: set[str] = set()
    open_quote = {q: False for q in _AMBI_QUOTES}
    for i, tok in enumerate(toks):
        lead, core = _split(tok)
        low = core.casefold()
        if not core:
            tier = "forced"
        elif not _is_word(core):
            if core in _CLOSERS or core in _CLOSING_QUOTES or core in _SEPARATORS:
                tier = "forced"
            elif core in _AMBI_QUOTES:
                nxt = toks[i + 1] if i + 1 < len(toks) else ""
                inside_word = (
                    core == "'" and not lead and i > 0 and _is_word(toks[i - 1][-1:])
                    and _is_word(nxt[:1])
                )
                if inside_word:
                    tier = "syntax"
                else:
                    tier = "forced" if open_quote[core] else "syntax"
                    open_quote[core] = not open_quote[core]
            else:
                tier = "syntax"
        elif low in _KEYWORDS:
            tier = "syntax"
        elif low in _FUNCTION_WORDS and core != "i":  # "I" is a pronoun, "i" a name
            tier = "function"
        elif low in seen:
            tier = "syntax"
        else:
            tier = "content"
        if core and _is_word(core):
            seen.add(low)
        tiers.append(tier)
    return tiers


def guess_probabilities(tokens) -> np.ndarray:
    """The acceptance probability ``q`` of each token by the automatic rule (see :func:`classify`).

    Returns a read-only float array, one probability per token, each a value
    of :data:`TIERS`.

    Examples
    --------
    >>> guess_probabilities(["for", " (", "x", ")", " x"]).tolist()
    [0.65, 0.92, 0.35, 0.97, 0.92]
    """
    q = np.array([TIERS[t] for t in classify(tokens)], dtype=float)
    q.setflags(write=False)
    return q


# ---------------------------------------------------------------------------
# Decoys: the draft's plausible wrong guess
# ---------------------------------------------------------------------------

_PUNCT_DECOYS = {
    ")": ",", "]": ",", "}": ")", "(": "[", "[": "(", "{": "(",
    ";": ")", ",": ".", ".": ",", ":": ",", "!": ".", "?": ".",
    "=": ":", "+": "-", "-": "+", "*": "+", "/": "*", "<": ">", ">": "<",
    '"': "'", "'": '"', "`": "'", "@": ".", "#": "/", "&": ",", "|": ",",
    "%": ".", "$": "(", "\\": "/", "~": "-", "^": "*",
    "“": '"', "”": ".", "‘": "'", "’": "'", "«": '"', "»": ".",
}

_FUNCTION_SIBLINGS = {
    "the": "a", "a": "the", "an": "the", "of": "in", "in": "on", "on": "in",
    "at": "in", "to": "for", "for": "to", "from": "to", "by": "with",
    "with": "by", "and": "or", "or": "and", "but": "and", "so": "and",
    "if": "when", "as": "like", "than": "then", "then": "than", "is": "was",
    "are": "were", "was": "is", "were": "are", "be": "been", "been": "be",
    "being": "been", "am": "was", "has": "had", "have": "had", "had": "has",
    "do": "did", "does": "did", "did": "does", "not": "now", "no": "not",
    "it": "this", "its": "the", "this": "that", "that": "which",
    "these": "those", "those": "these", "there": "here", "here": "there",
    "which": "that", "who": "which", "whom": "who", "whose": "who",
    "what": "which", "when": "if", "where": "when", "how": "why",
    "why": "how", "i": "we", "you": "we", "he": "she", "she": "he",
    "we": "they", "they": "we", "me": "us", "him": "her", "her": "his",
    "us": "them", "them": "us", "my": "our", "your": "our", "his": "her",
    "our": "their", "their": "our", "will": "would", "would": "will",
    "can": "could", "could": "can", "should": "would", "shall": "will",
    "may": "might", "might": "may", "must": "should", "all": "each",
    "any": "some", "some": "any", "each": "every", "every": "each",
    "just": "only", "also": "too", "very": "so", "up": "out", "out": "up",
    "into": "onto", "about": "over", "over": "about", "like": "as",
    "only": "just", "such": "so",
    "s": "t", "t": "s", "re": "ve", "ve": "re", "ll": "d", "d": "ll", "m": "d",
    "le": "la", "la": "le", "les": "des", "de": "du", "des": "les",
    "du": "de", "un": "une", "une": "un", "et": "ou", "est": "était",
    "en": "dans", "au": "à", "der": "die", "die": "der", "das": "die",
    "und": "oder", "ein": "eine", "eine": "ein", "ist": "war",
}

_KEYWORD_SIBLINGS = {
    "def": "class", "elif": "else", "else": "elif", "lambda": "def",
    "return": "yield", "yield": "return", "function": "const", "const": "let",
    "let": "const", "var": "let", "null": "undefined", "undefined": "null",
    "none": "null", "true": "false", "false": "true", "self": "cls",
    "this": "self", "import": "from", "class": "def", "async": "await",
    "await": "async", "typeof": "instanceof", "instanceof": "typeof",
    "while": "for", "try": "if", "except": "finally", "catch": "finally",
    "finally": "catch", "raise": "return", "throw": "return", "new": "await",
    "void": "int", "int": "float", "str": "int", "float": "int", "bool": "int",
    "print": "input", "range": "len", "len": "range", "console": "window",
    "length": "size", "push": "pop", "append": "extend", "pass": "return",
    "break": "continue", "continue": "break",
}

_WORD_BANKS = {
    "ing": ("going", "making", "holding", "turning", "looking"),
    "ly": ("really", "quickly", "nearly", "simply"),
    "ed": ("turned", "opened", "moved", "started", "called"),
    "s": ("things", "days", "parts", "people", "words"),
    "code": ("value", "item", "data", "result", "index", "count"),
    "": ("thing", "time", "way", "part", "place", "word", "day", "work"),
}


def _match_case(word: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _bank_for(core: str, prev: str) -> tuple[str, ...]:
    if "_" in core or any(c.isupper() for c in core[1:]) or prev == ".":
        return _WORD_BANKS["code"]
    low = core.casefold()
    for suffix in ("ing", "ly", "ed"):
        if low.endswith(suffix) and len(low) > len(suffix) + 2:
            return _WORD_BANKS[suffix]
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return _WORD_BANKS["s"]
    return _WORD_BANKS[""]


def _word_decoy(core: str, prev: str, earlier: list[str], tier: str) -> str:
    low = core.casefold()
    if core.isdigit():
        try:
            return str(int(core) + 1).zfill(len(core))
        except ValueError:  # a digit int() does not read; never seen, but be safe
            return "0" if core != "0" else "1"
    if low in _KEYWORD_SIBLINGS:
        return _match_case(_KEYWORD_SIBLINGS[low], core)
    if low in _FUNCTION_SIBLINGS and core != "i":
        return _match_case(_FUNCTION_SIBLINGS[low], core)
    # A repeat, or a word the English banks would not fit: copy another name
    # already in the text, the way a draft copies the wrong variable.
    if tier == "syntax" or not core.isascii():
        for w in reversed(earlier):
            wl = w.casefold()
            is_name = wl not in _KEYWORDS and (wl not in _FUNCTION_WORDS or w == "i")
            if wl != low and is_name:
                return w
    if len(core) == 1 and core.isascii():  # a one-letter name: the next letter
        return chr(ord(core) + 1) if core not in "zZ" else chr(ord(core) - 1)
    bank = _bank_for(core, prev)
    pick = bank[zlib.crc32(low.encode("utf-8", "surrogatepass")) % len(bank)]
    if pick == low:
        pick = bank[(bank.index(pick) + 1) % len(bank)]
    return _match_case(pick, core)


def make_decoys(tokens) -> list[str]:
    """A plausible wrong guess for each token, deterministically.

    The decoy keeps the token's leading whitespace and is never equal to the
    token: a sibling function word (``the`` -> ``a``), the next number, a
    neighbouring punctuation mark (``)`` -> ``,``), another name already in
    the text for a repeated name, otherwise a common word of the same shape
    (``-ing``, ``-ly``, ``-ed``, plural, code identifier).

    Examples
    --------
    >>> make_decoys(["The", " cat", " sat", " on", " the", " mat", ".", " 9", " cat"])
    ['A', ' thing', ' thing', ' in', ' a', ' way', ',', ' 10', ' mat']
    """
    toks = _check_token_list(tokens)
    tiers = classify(toks)
    out: list[str] = []
    earlier: list[str] = []
    prev = ""
    for tok, tier in zip(toks, tiers):
        lead, core = _split(tok)
        if not core:
            decoy = " " if tok != " " else "\n"
        elif _is_word(core):
            decoy = lead + _word_decoy(core, prev, earlier, tier)
        else:
            alt = _PUNCT_DECOYS.get(core, "," if core != "," else ".")
            decoy = lead + alt
        if decoy == tok:  # cannot happen by construction; keep the promise anyway
            decoy = lead + ("." if core != "." else ",")
        out.append(decoy)
        if core and _is_word(core) and not core.isdigit():
            earlier.append(core)
        prev = core
    return out


# ---------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------


def _check_token_list(tokens) -> list[str]:
    if isinstance(tokens, (str, bytes)):
        raise ValueError("tokens must be a sequence of strings, not one string; use tokenize()")
    toks = list(tokens)
    for i, t in enumerate(toks):
        if not isinstance(t, str) or not t:
            raise ValueError(f"tokens[{i}] must be a non-empty string; got {t!r}")
    return toks


def _nonempty_str(where: str, key: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {key!r} must be a non-empty string; got {value!r}")
    return value


def _text_from_record(data, where: str, expect_id: str | None = None) -> Text:
    """Validate one parsed data file; every error names ``where`` and the token."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: the file must hold one JSON object; got {type(data).__name__}")
    tid = _nonempty_str(where, "id", data.get("id"))
    if not _ID_RE.fullmatch(tid):
        raise ValueError(
            f"{where}: 'id' must be lowercase letters, digits, '-' or '_'; got {tid!r}"
        )
    if expect_id is not None and tid != expect_id:
        raise ValueError(f"{where}: 'id' must match the file name ({expect_id!r}); got {tid!r}")
    title = _nonempty_str(where, "title", data.get("title"))
    kind = _nonempty_str(where, "kind", data.get("kind"))
    description = _nonempty_str(where, "description", data.get("description"))
    raw = data.get("tokens")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: 'tokens' must be a non-empty list; got {type(raw).__name__}")
    tokens, qs, decoys, tiers = [], [], [], []
    for i, tok in enumerate(raw):
        at = f"{where}: token {i}"
        if not isinstance(tok, dict):
            raise ValueError(f"{at} must be an object with text, q and decoy; got {tok!r}")
        extra = set(tok) - _TOKEN_KEYS
        if extra:
            raise ValueError(
                f"{at} has unknown keys {sorted(extra)}; allowed {sorted(_TOKEN_KEYS)}"
            )
        text = tok.get("text")
        if not isinstance(text, str) or not text:
            raise ValueError(f"{at}: 'text' must be a non-empty string; got {text!r}")
        q = tok.get("q")
        if isinstance(q, bool) or not isinstance(q, numbers.Real) or not math.isfinite(q) \
                or not 0.0 <= q <= 1.0:
            raise ValueError(f"{at} ({text!r}): 'q' must be a finite number in [0, 1]; got {q!r}")
        decoy = tok.get("decoy")
        if not isinstance(decoy, str) or not decoy:
            raise ValueError(f"{at} ({text!r}): 'decoy' must be a non-empty string; got {decoy!r}")
        if decoy == text:
            raise ValueError(
                f"{at} ({text!r}): 'decoy' must be a wrong guess, not the token itself"
            )
        tier = tok.get("tier")
        if tier is not None:
            if tier not in TIERS:
                raise ValueError(
                    f"{at} ({text!r}): 'tier' must be one of {list(TIERS)}; got {tier!r}"
                )
            if not math.isclose(q, TIERS[tier]):
                raise ValueError(
                    f"{at} ({text!r}): 'q' is {q} but tier {tier!r} sets {TIERS[tier]}"
                )
        tokens.append(text)
        qs.append(float(q))
        decoys.append(decoy)
        tiers.append(tier)
    if any(t is None for t in tiers):
        if not all(t is None for t in tiers):
            first = tiers.index(None)
            raise ValueError(
                f"{where}: token {first} has no 'tier' but others do; label all or none"
            )
        tiers = []
    return Text(tid, title, kind, description, tuple(tokens), qs, tuple(decoys), tuple(tiers))


def _read_text_file(path) -> Text:
    """Read and validate one text file (any path; used by the loaders and tests)."""
    path = Path(path)
    where = path.name
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    return _text_from_record(data, where, expect_id=path.stem)


def _texts_dir() -> Path:
    return _TEXTS_DIR


def text_ids() -> tuple[str, ...]:
    """Ids of the bundled texts (file names without ``.json``), sorted."""
    return tuple(sorted(p.stem for p in _texts_dir().glob("*.json")))


def load_text(id: str) -> Text:
    """Load one bundled text by id (e.g. ``"js-loop"``), validated and cached.

    Raises
    ------
    ValueError
        If no text has that id, or its file is malformed (the message names
        the file and the token index).
    """
    ids = text_ids()
    if not isinstance(id, str) or id not in ids:
        raise ValueError(f"text id must be one of {list(ids)}; got {id!r}")
    return _load_cached(id)


@functools.lru_cache(maxsize=None)
def _load_cached(id: str) -> Text:
    return _read_text_file(_texts_dir() / f"{id}.json")


@functools.lru_cache(maxsize=None)
def load_texts() -> tuple[Text, ...]:
    """All bundled texts: code, json, letter, translation, poem, then others by id."""
    texts = [load_text(i) for i in text_ids()]
    rank = {k: n for n, k in enumerate(KIND_ORDER)}
    return tuple(sorted(texts, key=lambda t: (rank.get(t.kind, len(rank)), t.id)))


def text_from_paste(s: str, max_chars: int = PASTE_MAX_CHARS) -> Text:
    """Turn a visitor's pasted text into a :class:`Text` by the automatic rule.

    The text is kept as plain strings: nothing is evaluated or interpreted,
    and escaping it for a web page is the view's job.

    Raises
    ------
    ValueError
        With a message fit to show the visitor: when ``s`` is empty or only
        whitespace, or longer than ``max_chars`` characters.

    Examples
    --------
    >>> text_from_paste("x" * 2001)
    Traceback (most recent call last):
    ...
    ValueError: Your text must be at most 2,000 characters; got 2,001.
    """
    s = check_paste(s, max_chars)
    tokens = tokenize(s)
    tiers = classify(tokens)
    return Text(
        id="pasted",
        title="Your text",
        kind="pasted",
        description="Text you pasted, with guessability set by the automatic rule.",
        tokens=tuple(tokens),
        q=[TIERS[t] for t in tiers],
        decoys=tuple(make_decoys(tokens)),
        tiers=tuple(tiers),
    )


#: The default stream: code, then a poem, then JSON (Episode 4's texts).
DEFAULT_TEXT_IDS = ("js-loop", "poem-kettle", "json-record")


def make_stream(ids=DEFAULT_TEXT_IDS, repeats: int = 1) -> Stream:
    """The bundled texts ``ids`` back to back, each repeated ``repeats`` times in a row.

    Examples
    --------
    >>> s = make_stream(("js-loop", "poem-kettle"), repeats=2)
    >>> [seg[0] for seg in s.segments]
    ['code', 'poem']
    """
    if isinstance(ids, str) or not ids:
        raise ValueError(f"ids must be a non-empty sequence of text ids; got {ids!r}")
    return stream_of([load_text(tid) for tid in ids], repeats)


# ---------------------------------------------------------------------------
# Update rules (pure functions, tested on hand-made sequences)
# ---------------------------------------------------------------------------
