"""Why checking is nearly free with float32 weights on this CPU and not with 4-bit ones: the
roofline in words, every figure computed from the measured pass times it describes (and, for what
the integer tile changed, from the float tiles' times its record keeps beside them).

A pass over ``n`` positions reads every weight once and does ``2 n`` flops with each (a multiply
and an add per position). Float32 weights are 4 bytes: the reading dominates and the time hardly
grows with ``n``. The model file's 4-bit blocks (Q4_1, a scale and a minimum per 32 weights, and
8-bit blocks for the embedding) read about 5 times fewer bytes, so one position is quick, but every
weight is multiplied again for every position (as integers against 8-bit activations where the CPU
has the integer tile, else widened to float32), so the arithmetic soon sets the time. The same
kernel runs both (``lm.kernel``), so the two curves differ by the format alone.

The format moves the break-even: with a draft that costs nothing, a round of ``k`` drafts pays once
E(q, k) tokens a pass exceed the pass's price in steps, ``ratio(k + 1)``; Leviathan's break-even
with ``k c = ratio(k + 1) - 1``.
"""

from __future__ import annotations

from ..data import hardware
from ..sim import theory
from ..sim.batching import PassTimeCurve
from . import cpu
from .page import esc

#: The pass size the sentences compare against one position (a chain of k = 4 drafts).
N_CHECK = 5
#: The acceptance rate of the worked example (tokens a second in each format).
Q_EXAMPLE = 0.8


def _times(curve: PassTimeCurve, n: int = N_CHECK) -> tuple[float, float]:
    return float(curve.time_ms(1)), float(curve.time_ms(n) / curve.time_ms(1))


def free_break_even(curve: PassTimeCurve, n: int = N_CHECK) -> float:
    """The acceptance rate a draft that costs nothing needs to pay with ``n - 1`` drafts a round
    on ``curve``; NaN when no rate does (:func:`.cpu.free_break_even`)."""
    return cpu.free_break_even(curve, n - 1)


def example(curve: PassTimeCurve, q: float = Q_EXAMPLE, n: int = N_CHECK) -> tuple[float, float]:
    """(speedup, tokens a second) of a free draft at ``q`` with ``n - 1`` drafts a round."""
    one, ratio = _times(curve, n)
    speedup = float(theory.expected_tokens_per_round(q, n - 1)) / ratio
    return speedup, speedup * 1e3 / one


def roofline_html(f32: PassTimeCurve, q4: PassTimeCurve, h200: PassTimeCurve, *,
                  q4_source: str | None = None) -> str:
    """Three paragraphs: this CPU's float32 pass, the same kernel on the file's 4-bit blocks (and
    llama.cpp on that file), and what the format does to the break-even and to tokens a second.
    (The sentence above them on the page says where the curves were measured.) ``q4_source``: where
    ``q4`` was measured when it is not the shipped 4-bit record (this server's record, its
    ``CpuPasses.source``); the shipped record's own figures (float32 and the float tiles timed in
    its loop) are then named as the shipped machine's."""
    meta, q_meta = hardware.load_cpu_meta(), hardware.load_cpu_q4_meta()
    f_bytes, q_bytes = int(meta["weight_bytes"]), int(q_meta["weight_bytes"])
    f1, f5 = _times(f32)
    q1, q5 = _times(q4)
    l1, l5 = _times(hardware.llamacpp_curve())
    _, h5 = _times(h200)
    gbps = f_bytes / (f1 / 1e3) / 1e9
    verdict = ("so checking 5 positions costs about what writing one does" if f5 < 1.3 else
               "so checking 5 positions costs less than two steps" if f5 < 2.0 else
               "yet checking 5 positions still costs two steps or more")
    if q4_source is None:
        # Against float32 timed in the same interleaved loop, not the float32 curve above (another day).
        same = float(q_meta.get("f32_median_ms", {}).get("1", f1))
        beside, where = "timed beside it", esc(_machine(q_meta))
    else:  # this server's 4-bit record: against the float32 curve above
        same, beside, where = f1, "above", esc(q4_source.removeprefix("measured on "))
    faster = (f"{same / q1:.1f}× quicker than float32's {same:.1f} ms {beside}" if q1 < same
              else f"no quicker than float32's {same:.1f} ms {beside}")
    if q5 > f5:
        bound = (f"arithmetic, not reading, sets its time, and a verify pass is dearer in steps "
                 f"({q5:.2f}× against {f5:.2f}×)")
    else:
        bound = f"which here is no dearer in steps than float32's {f5:.2f}×"
    return (
        f'<p class="sdp-econ" id="roofline-words"><strong>Why the two CPU curves differ.</strong> '
        f"A decoding step reads every weight once: {f_bytes / 1e6:.0f} MB of float32 weights in "
        f"{f1:.1f} ms here, at least {gbps:.0f} GB/s. Scoring more positions "
        f"reuses each weight while it is in the processor's cache, 2 flops per position, so the "
        f"extra positions cost arithmetic but no extra reading: a pass over {N_CHECK} positions "
        f"takes {f5:.2f}× a step, {verdict}.</p>"
        f'<p class="sdp-econ" id="roofline-q4">The hollow squares are the same model, same kernel, '
        f"reading the file's 4-bit blocks ({q_bytes / 1e6:.0f} MB, {f_bytes / q_bytes:.1f}× fewer "
        f"bytes), measured on {where}. One position takes {q1:.1f} ms, {faster}, "
        f"{_arithmetic(q_meta if q4_source is None else {})}, so {N_CHECK} positions "
        f"take {q5:.2f}× its step: {bound}.{_tiles(q_meta, shipped=q4_source is None)} (llama.cpp on the same file: {l1:.1f} ms a step and "
        f"{l5:.2f}× for {N_CHECK} positions. On the H200 a pass over {N_CHECK} takes {h5:.2f}× "
        f"one.)</p>" + _break_even(f32, q4))


def _arithmetic(q_meta: dict) -> str:
    """How the 4-bit curve's kernel multiplies each weight by each position, where its record
    says (the shipped one does; a server's record does not, and gets the words true of both)."""
    tile = str(q_meta.get("tile", ""))
    if tile.startswith("integer"):
        return ("but every weight is still multiplied once for every position (its activations "
                "rounded to 8 bits, four codes a step by the CPU's integer dot-product instructions)")
    if tile.startswith("float"):
        return "but every weight is widened to float32 again for every position"
    return "but every weight is multiplied again for every position"


def _tiles(q_meta: dict, *, shipped: bool = True) -> str:
    """What the integer tile did to a 4-bit check, from the float tiles timed in the same loop
    ("" where the record has no such column); named as the shipped machine's where the curve
    shown is not the shipped one."""
    flt = q_meta.get("q4_float_tiles_median_ms") or {}
    if not {"1", str(N_CHECK)} <= set(flt):
        return ""
    one, check = float(flt["1"]), float(flt[str(N_CHECK)])
    q1, qn = float(q_meta["q4_median_ms"]["1"]), float(q_meta["q4_median_ms"][str(N_CHECK)])
    on = "" if shipped else f" on {esc(_machine(q_meta))}"
    return (f" Before the integer tile, with every weight widened to float32 for every position "
            f"(timed in the same loop{on}), a step took {one:.1f} ms and {N_CHECK} positions "
            f"{check:.1f} ms ({check / one:.2f}× a step): the integer tile makes that check "
            f"{check / qn:.1f}× cheaper, and the step {one / q1:.1f}× quicker.")


def _break_even(f32: PassTimeCurve, q4: PassTimeCurve) -> str:
    """The format's effect on the break-even and on tokens a second, in one paragraph."""
    k = N_CHECK - 1
    bf, bq = free_break_even(f32), free_break_even(q4)

    def need(b: float) -> str:
        return "no acceptance rate at all" if b != b else f"q ≥ {b:.2f}"

    sf, tf = example(f32)
    sq, tq = example(q4)
    if sq < sf and tq > tf:
        moral = "the faster format has the smaller speedup"
    elif sq >= sf and tq >= tf:
        moral = "here 4 bits wins on both counts"
    else:
        moral = "here float32 wins on both counts"
    dearer = ("a 4-bit check costs more steps, so the draft must be right more often"
              if (bq != bq) or (bf == bf and bq > bf) else "here a 4-bit check costs no more steps")
    return (f'<p class="sdp-econ" id="roofline-break-even"><strong>What the format does to the '
            f"break-even.</strong> A draft that cost nothing would pay at k = {k} once it is right "
            f"{need(bf)} of the time with float32 weights, and {need(bq)} with 4-bit ones: "
            f"{dearer}. At q = {Q_EXAMPLE} (E = "
            f"{float(theory.expected_tokens_per_round(Q_EXAMPLE, k)):.2f} tokens a pass) float32 "
            f"speeds up {sf:.2f}× to {tf:.0f} tokens a second and 4 bits {sq:.2f}× to {tq:.0f}: "
            f"{moral}.</p>")


def _machine(meta: dict) -> str:
    return (f"the machine that built this page, a {meta.get('cores', '?')}-core "
            f"{meta.get('cpu') or 'CPU'} on {meta.get('date_utc', '')} with {_threads(meta)}")


def _threads(meta: dict) -> str:
    n = int(meta.get("threads", 1))
    return f"{n} thread{'s' if n != 1 else ''}"


__all__ = ["N_CHECK", "Q_EXAMPLE", "example", "free_break_even", "roofline_html"]
