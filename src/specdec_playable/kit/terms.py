"""The series' vocabulary: every term the glossary defines, and the linker that points a page's
prose at it.

:data:`TERMS` is the glossary's content, one :class:`Term` per concept, with the notation the
whole series uses (q the acceptance rate, k the draft length, c the cost of a draft step,
p_big and p_draft the two models' next-token distributions). :func:`link_terms` turns the first
use of each term in a block of package HTML into a link to its entry (``glossary#<key>``), and
leaves tags, attributes, links, code and headings alone. The page shell's prose blocks go
through it (``kit/page.py``), so a term is linked wherever a page uses it;
``tests/test_glossary.py`` builds every page and checks that every term a page's text uses is
linked there.

No Panel or Bokeh here: tests call these directly.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import lru_cache

#: Where the glossary is served, relative to any page of the site.
GLOSSARY_HREF = "./glossary"


@dataclass(frozen=True)
class Term:
    """One glossary entry.

    ``key`` is its anchor (``glossary#<key>``), ``name`` its heading, ``definition`` trusted
    package HTML, ``patterns`` the regular expressions (case-insensitive, whole words) that
    find the term in a page's text, and ``see`` the episode numbers that show it best.
    """

    key: str
    name: str
    definition: str
    patterns: tuple[str, ...]
    see: tuple[int, ...] = ()


TERMS: tuple[Term, ...] = (
    Term("acceptance-rate", "acceptance rate q (draft quality)",
         "The share of drafted tokens the big model accepts. Episodes 2, 3, 5 and 8 set it with a "
         "dial called <em>draft quality q</em>, each drafted token accepted with probability q on "
         "its own; Episodes 4, 6 and 7 measure it on real text. Under speculative sampling the "
         "acceptance rate at one position is q = Σ<sub>x</sub> min(p<sub>big</sub>(x), "
         "p<sub>draft</sub>(x)), the overlap of the two distributions.",
         (r"acceptance rates?", r"draft quality", r"acceptance probabilit(?:y|ies)", r"acceptance"),
         (3,)),
    Term("draft-length", "draft length k",
         "How many tokens the draft model guesses in one round before the big model checks them.",
         (r"draft length",), (3,)),
    Term("draft-cost", "draft cost c",
         "The cost of one draft step as a fraction of one big-model pass: c = 0.1 means ten draft "
         "steps cost as much as one pass of the big model. A round costs 1 + k·c passes. Measured "
         "on a real draft, c depends on where its guesses are timed: alone, one after another on a "
         "context the draft has already read (Episode 4's figure for the draft head), a guess is "
         "cheapest; inside a real run (Episode 7) each round's guesses also pay for reading the "
         "tokens the last pass accepted, and come just after a pass of the big model has pushed "
         "the draft's weights out of the processor's cache, so the same guess costs more; and a "
         "live run measures its own, with whatever else the server is doing then.",
         (r"draft cost",), (5,)),
    Term("distributions", "p_big(x), p_draft(x): next-token distributions",
         "For each possible next token x, the probability a model gives it: p<sub>big</sub>(x) is "
         "the big model's, p<sub>draft</sub>(x) the draft's. Sampling draws the next token from it; "
         "greedy decoding takes its most probable token.",
         (r"next-token distributions?",), (6,)),
    Term("draft-head", "draft head",
         "This project's trained draft: one small layer that reads the big model's own features "
         "and the last token, predicts the feature the big model will compute next, and reads it "
         "out through the big model's output head (the EAGLE idea). Trained here on code, prose "
         "and the model's own replies; a guess costs a small fraction of a pass.",
         (r"draft heads?",), (4,)),
    Term("big-model", "big model (the target)",
         "The model whose text speculative decoding writes, the one a visitor would otherwise run "
         "alone; papers call it the target. It checks the draft's guesses and has the last word: "
         "the text is always its own.", (r"big models?", r"target models?"), (2,)),
    Term("verify-pass", "verify pass (checking pass)",
         "One forward pass of the big model over the last accepted token and the k guesses after "
         "it: it gives the big model's own next-token distribution at every one of those "
         "positions at once, so it can judge every guess and write one token of its own.",
         (r"verify pass(?:es)?", r"checking pass(?:es)?"), (2,)),
    Term("plain-decoding", "plain decoding",
         "Decoding without a draft: one pass of the big model for each token it writes. Every "
         "speedup on these pages is measured or computed against it.",
         (r"plain decoding",), (2,)),
    Term("tokens-per-round", "tokens per round E",
         "How many tokens one round writes on average. With each draft accepted with probability q "
         "until the first miss, E = (1 − q<sup>k+1</sup>) / (1 − q): the accepted drafts plus the big "
         "model's own token.", (r"tokens per round",), (5,)),
    Term("tokens-per-pass", "tokens per pass",
         "The tokens one checking pass of the big model writes, on average: the guesses it accepted "
         "plus its own token, so never less than 1 (with one chain of guesses it is the tokens per "
         "round; Episode 8 counts it for trees). Episodes 4, 7 and 8 measure it on real text; on a "
         "real reply the end-of-text token the last pass writes counts, though the reply does not "
         "show it.", (r"tokens per (?:verify )?pass",), (7, 8)),
    Term("by-the-work", "by the work (the work-based speedup)",
         "Episode 7's second speedup: the one an idle machine would give. Each pass of the run is "
         "priced at the median time of passes of its size over the median plain step, both measured "
         "in the same run, and the tokens written are divided by that total. A busy moment on the "
         "server, which slows a few passes, then no longer moves the figure; the measured speedup "
         "beside it is the clocks' own.", (r"by the work",), (7,)),
    Term("speedup", "speedup",
         "How much faster than the big model alone: E / (1 + k·c) by the theory (Leviathan, Kalman "
         "and Matias 2023), or the big model's time alone divided by the measured time with "
         "speculation. Below 1× speculation is slower.", (r"speed-?ups?",), (3, 5)),
    Term("break-even", "break-even",
         "The setting where the speedup is exactly 1×: speculation neither helps nor hurts. For "
         "each k and c there is a break-even q; below it speculation is slower.",
         (r"break-even",), (5,)),
    Term("bonus-token", "bonus token",
         "When every draft of a round is accepted, the big model's checking pass has already "
         "computed the next position too, so the round adds one more token for free.",
         (r"bonus tokens?",), (2,)),
    Term("bad-round", "bad round",
         "A round whose first draft is rejected: it pays for k draft steps and a full pass and "
         "writes only the big model's one token, slower than plain decoding.",
         (r"bad rounds?",), (2,)),
    Term("speculative-sampling", "speculative sampling (the sampling rule)",
         "The rule that keeps the big model's distribution exactly while sampling: accept a "
         "drafted x with probability min(1, p<sub>big</sub>(x) / p<sub>draft</sub>(x)); after a "
         "rejection draw the token from norm(max(0, p<sub>big</sub> − p<sub>draft</sub>)).",
         (r"speculative sampling",), (6,)),
    Term("greedy", "greedy decoding",
         "Always taking the most probable next token. Speculation under greedy decoding keeps a "
         "draft exactly when it is the big model's top token, and writes the same text as plain "
         "greedy decoding.", (r"greedy decoding", r"greedy"), (7,)),
    Term("temperature", "temperature",
         "A knob on sampling: below 1 it sharpens the distribution towards the likeliest tokens, "
         "above 1 it flattens it; at 0 sampling becomes greedy decoding.",
         (r"temperature",), (6,)),
    Term("forward-pass", "forward pass",
         "One run of a model over its input, giving the next-token distribution at every position "
         "it reads. Writing one token takes one pass; checking k given tokens also takes one.",
         (r"forward pass(?:es)?",), (1,)),
    Term("memory-bound", "memory-bound",
         "A computation limited by how fast the weights can be read from memory, not by "
         "arithmetic. One position of a large model is memory-bound: every weight is read once for "
         "very little work, so a few more positions in the same pass cost almost nothing.",
         (r"memory-bound",), (8,)),
    Term("compute-bound", "compute-bound",
         "A computation limited by the arithmetic units: with many positions (or many users) in "
         "one pass the work grows with each position, and extra positions cost in proportion.",
         (r"compute-bound",), (8,)),
    Term("roofline", "roofline",
         "A model of a pass's time as the larger of two floors: the time to read the weights "
         "(memory-bound) and the time to do the arithmetic (compute-bound). Episode 8 fits one to "
         "the measured H200 pass times beyond the largest measured batch.",
         (r"roofline",), (8,)),
    Term("batch-size", "batch size B",
         "How many users' sequences a server runs through the model in one pass. A busy server's "
         "passes are already full of work, so the drafts' extra positions are no longer free.",
         (r"batch sizes?",), (8,)),
    Term("kv-cache", "KV cache",
         "The keys and values a transformer has computed for the tokens it has read, kept so the "
         "next pass computes only the new positions. A rejected draft's entries are thrown away.",
         (r"KV caches?",), (1,)),
    Term("cuda-graph", "CUDA graph",
         "A GPU feature that records a whole sequence of kernel launches once and replays it with "
         "one call, so a pass does not wait on Python launching each kernel.",
         (r"CUDA graphs?",), (1,)),
    Term("eager", "eager mode (eager PyTorch)",
         "Running a model the ordinary PyTorch way, launching every GPU kernel one by one from "
         "Python. For small batches the launches, not the GPU, set the pace.",
         (r"eager(?: mode| PyTorch)", r"eager"), (1,)),
    Term("token-tree", "token tree",
         "A draft that offers several guesses per position, as a tree, instead of one chain. One "
         "pass checks every node (with a tree attention mask) and keeps the longest accepted path.",
         (r"token trees?", r"trees? of guesses"), (8,)),
    Term("spine", "spine tree (w × d)",
         "Episode 8's tree shape: w guesses at each of d levels, each level hung under the previous "
         "level's best guess, so the tree has w·d nodes.", (r"spines?",), (8,)),
    Term("prompt-lookup", "prompt lookup",
         "A draft with no model: it copies the tokens that followed the same words earlier in the "
         "prompt. Nearly free, and good when the reply repeats its input.",
         (r"prompt lookup",), (7,)),
    Term("ngram-draft", "n-gram draft (learned draft)",
         "A table of which token most often followed each run of one to three tokens in its "
         "training text. Episode 4's and 7's learned draft learned Python source this way.",
         (r"n-gram", r"learned draft"), (4, 7)),
    Term("memory-draft", "memory draft (drafting from memory)",
         "A draft with no model and no network: an index of the big model's own past replies, "
         "searched for the longest stretch of the text so far it has seen before; it proposes what "
         "most often came next there, for as long as most past replies agreed (SuffixDecoding, "
         "Oliaro et al. 2024). A model repeats its own phrasings from one conversation to the next, "
         "so its past replies predict its next one.",
         (r"memory drafts?", r"drafting from memory"), (7,)),
    Term("early-exit", "early exit",
         "A draft made from the big model's own first layers, read out early. It shares the big "
         "model's weights but costs a fraction of a pass per guess.", (r"early[- ]exit",), (7,)),
    Term("in-fifths", "in fifths (Episode 4's acceptance bars)",
         "Episode 4 groups each token's measured acceptance into five equal bins, 0–0.2, 0.2–0.4, "
         "0.4–0.6, 0.6–0.8 and 0.8–1: the thicker the bar above a token, the higher its bin.",
         (r"in fifths",), (4,)),
    Term("monte-carlo", "Monte Carlo",
         "Estimating an average by simulating many random runs and averaging them, here rounds of "
         "drafting and checking, drawn fresh for every move of a control.",
         (r"Monte[- ]Carlo",), (8,)),
    Term("interval", "95% interval",
         "The range that would contain the true average in 95 of 100 repeats of a measurement. "
         "Episode 3 draws it around each measured speedup.", (r"95% intervals?",), (3,)),
    Term("chi-square", "chi-square test and p-value",
         "A test of whether counted draws match a distribution: the chi-square statistic adds up "
         "(observed − expected)² / expected over the tokens. The p-value is the chance of a "
         "statistic at least this large if the draws really come from the distribution; a tiny "
         "p-value says they do not.", (r"chi-square", r"p-values?"), (6,)),
    Term("degrees-of-freedom", "degrees of freedom",
         "For a chi-square test over n groups of counts, n − 1: the counts must add up to the total, "
         "so only n − 1 of them can vary freely.", (r"degrees of freedom",), (6,)),
    Term("goodput", "goodput",
         "Tokens a server delivers to its users per second, counting only the text they keep: with "
         "speculation, the accepted guesses and the big model's own tokens, never the rejected "
         "guesses it also computed.", (r"goodput",)),
    Term("bootstrap", "bootstrap interval",
         "An interval for a measured figure without a formula: resample the measured rounds with "
         "replacement many times, compute the figure each time, and keep the middle 95% of the "
         "results. Episode 7's speedup intervals are made this way, over the run's rounds.",
         (r"bootstrap",)),
    Term("eagle", "EAGLE",
         "A kind of trained draft (Li et al., 2024; EAGLE-3, 2025): one small layer that reads the big "
         "model's own hidden features and the next token, predicts the feature the big model will "
         "compute next, and reads it out through the big model's own output head. This project's "
         "draft head is built that way and trained here on the model's own replies.",
         (r"EAGLE(?:-\d)?",)),
    Term("float32", "float32",
         "Numbers stored in 32 bits (4 bytes) each, with about 7 significant digits. The real model "
         "here computes in float32, and can read its weights as float32 (538 MB) or as the model "
         "file's 4-bit blocks.", (r"float32",)),
    Term("bf16", "bf16 (bfloat16)",
         "Numbers stored in 16 bits (2 bytes) each, with float32's range and fewer digits; GPUs run "
         "large models in it. The H200 pass times on these pages were measured with bf16 weights.",
         (r"bf16", r"bfloat16")),
    Term("four-bit", "4-bit weights",
         "Weights stored in 4 bits each, in blocks of 32 that share a scale d and a minimum m (a "
         "weight is d × q + m, the model file's Q4_1 format). This model's file holds them in 97 MB "
         "against 538 MB as float32, so a CPU has about a fifth of the bytes to read, but must "
         "unpack each block before it multiplies (this project's kernel multiplies the codes by "
         "8-bit copies of the activations with integer instructions where the CPU has them).", (r"4-bit",)),
    Term("weight-format", "weight format",
         "How a model's weights are stored and read: float32 (4 bytes a weight), bf16 (2 bytes) or "
         "4-bit blocks (about 5 bits a weight with their scales). Where a pass is memory-bound, a "
         "smaller format makes it faster; the arithmetic is then a larger share of its time.",
         (r"weight formats?",)),
    Term("llama-cpp", "llama.cpp",
         "A widely used C/C++ program that runs language models on CPUs and GPUs from GGUF files "
         "such as this model's. The project times its own passes against llama.cpp's on the same "
         "file.", (r"llama\.cpp",)),
    # The most general words last: at any place in a text, a longer term above wins ("draft
    # length" before "draft", "bonus token" before "token", "bad round" before "round").
    Term("round", "round (draft, then verify)",
         "One cycle of speculative decoding: the draft proposes k tokens one after another, then "
         "one pass of the big model checks all of them at once and keeps the accepted ones plus "
         "one token of its own.",
         (r"rounds?",), (2,)),
    Term("draft", "draft (draft model)",
         "Whatever guesses the next tokens for the big model to check: a small model, a trained "
         "draft head, a table of n-grams or a rule such as prompt lookup. It is cheap because it "
         "is small; it only has to be right often enough.", (r"draft models?", r"drafts?"), (2,)),
    Term("token", "token",
         "The piece of text a model reads and writes at a time: a word, part of a word, a space "
         "with the word after it, or a mark. A model writes one token per pass of plain decoding.",
         (r"tokens?",), (1,)),
)

#: The series' term list: the words the pages use for its ideas, each with the glossary entry
#: that defines it. ``tests/test_glossary.py`` checks that each entry exists, that its patterns
#: find the word (so a page that uses it links it), and that some page uses it.
WORDS: dict[str, str] = {
    "acceptance": "acceptance-rate", "acceptance rate": "acceptance-rate",
    "draft quality": "acceptance-rate", "draft length": "draft-length", "draft cost": "draft-cost",
    "draft": "draft", "draft model": "draft", "draft head": "draft-head", "big model": "big-model",
    "token": "token", "round": "round", "verify pass": "verify-pass", "checking pass": "verify-pass",
    "forward pass": "forward-pass", "plain decoding": "plain-decoding", "speedup": "speedup",
    "tokens per round": "tokens-per-round", "tokens per pass": "tokens-per-pass",
    "break-even": "break-even", "bonus token": "bonus-token", "bad round": "bad-round",
    "next-token distribution": "distributions", "speculative sampling": "speculative-sampling",
    "greedy decoding": "greedy", "temperature": "temperature", "KV cache": "kv-cache",
    "memory-bound": "memory-bound", "compute-bound": "compute-bound", "roofline": "roofline",
    "batch size": "batch-size", "goodput": "goodput", "token tree": "token-tree", "spine": "spine",
    "prompt lookup": "prompt-lookup", "n-gram": "ngram-draft", "early exit": "early-exit",
    "memory draft": "memory-draft",
    "95% interval": "interval", "bootstrap": "bootstrap", "Monte Carlo": "monte-carlo",
    "chi-square": "chi-square", "p-value": "chi-square", "degrees of freedom": "degrees-of-freedom",
    "by the work": "by-the-work", "EAGLE": "eagle", "float32": "float32", "bf16": "bf16",
    "4-bit": "four-bit", "weight format": "weight-format", "llama.cpp": "llama-cpp",
}
#: The symbols the pages write in formulas and settings ("q = 0.60", "B = 64"), each with the
#: entry whose name carries it.
SYMBOLS: dict[str, str] = {
    "q": "acceptance-rate", "k": "draft-length", "c": "draft-cost", "E": "tokens-per-round",
    "B": "batch-size", "p_big": "distributions", "p_draft": "distributions", "w × d": "spine",
}

_BY_KEY = {t.key: t for t in TERMS}
if len(_BY_KEY) != len(TERMS):
    raise ValueError("two glossary terms share a key")

#: One pattern for every term that has some, a named group per term (whole words, any case, a
#: space matching any run of white space, as in HTML source broken over lines).
_FIND = re.compile("|".join(
    f"(?P<t{i}>{'|'.join(rf'(?<![\w-]){p.replace(' ', r'\s+')}(?![\w-])' for p in t.patterns)})"
    for i, t in enumerate(TERMS) if t.patterns), re.IGNORECASE)
#: Tags whose text is not linked: links themselves, code, headings, controls, scripts.
_SKIP = frozenset({"a", "code", "pre", "kbd", "script", "style", "button", "label", "textarea",
                   "select", "option", "h1", "h2", "h3", "h4", "svg", "title"})
_TAG = re.compile(r"<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9]*)\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*?(/?)>",
                   re.DOTALL)


def term(key: str) -> Term:
    """The glossary entry ``key``."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise ValueError(f"no glossary term {key!r}; known: {sorted(_BY_KEY)}") from None


def find_terms(text: str) -> list[str]:
    """The keys of the terms ``text`` (plain text) uses, in the glossary's order."""
    found = {next(k for k, v in m.groupdict().items() if v) for m in _FIND.finditer(text)}
    # A term without patterns is defined in the glossary but not looked for.
    return [t.key for i, t in enumerate(TERMS) if f"t{i}" in found]


def term_href(key: str) -> str:
    """The link to a term's glossary entry."""
    return f"{GLOSSARY_HREF}#{term(key).key}"


@lru_cache(maxsize=4096)
def link_terms(markup: str) -> str:
    """``markup`` (trusted package HTML) with the first use of each glossary term linked to its
    entry. Text inside tags, links, code, headings and controls is left as it is.

    Examples
    --------
    >>> link_terms("<p>Past the break-even point, a <code>break-even</code> call.</p>")
    '<p>Past the <a class="sdp-term" href="./glossary#break-even">break-even</a> point, a <code>break-even</code> call.</p>'
    """
    out: list[str] = []
    # A term the markup links already (a second pass, say) is not linked again.
    done = {i for i, t in enumerate(TERMS) if f'href="{html.escape(term_href(t.key))}"' in markup}
    skip = 0
    pos = 0

    def link(text: str) -> str:
        def one(m: re.Match) -> str:
            i = int(next(k for k, v in m.groupdict().items() if v)[1:])
            if i in done:
                return m.group(0)
            done.add(i)
            return (f'<a class="sdp-term" href="{html.escape(term_href(TERMS[i].key))}">'
                    f"{m.group(0)}</a>")
        return _FIND.sub(one, text)

    for m in _TAG.finditer(markup):
        text = markup[pos:m.start()]
        out.append(link(text) if text and not skip else text)
        out.append(m.group(0))
        closing, name, selfclosing = m.group(1), (m.group(2) or "").lower(), m.group(3)
        if name in _SKIP and not selfclosing:
            skip = max(0, skip - 1) if closing else skip + 1
        pos = m.end()
    tail = markup[pos:]
    out.append(link(tail) if tail and not skip else tail)
    return "".join(out)
