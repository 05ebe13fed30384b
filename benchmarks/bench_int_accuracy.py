"""The error the integer tile's 8-bit activations add to the 4-bit model's logits.

Run from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python benchmarks/bench_int_accuracy.py

For each of the six prompts the weight formats are compared on (``lm.prompts.FORMAT_CHECKS``, as in
``tests/test_lm_q4_model.py``), the float32 model
writes 32 greedy tokens; then the prompt and those tokens go through one pass of the float32 model,
of the 4-bit model with the float tiles (float32 activations: ``tuning.set_int_isa("")``) and of
the 4-bit model with the integer tile (this CPU's instruction set), and the script prints, per
prompt: the largest |logit difference| of each 4-bit path from float32, as a share of the largest
|logit|; the greedy tokens the integer path picks differently from float32 (of the positions the
prompt's reply covers); and the largest float32 top-two margin among those differences (below it a
choice is a near-tie the rounding may flip). Then the same for passes over 1, 5, 9, 17 and 33
positions after the prompt, the shapes a decode step and a verification take.
"""

from __future__ import annotations

import datetime as _dt
import platform
import sys

import numpy as np

from specdec_playable.lm import get_model
from specdec_playable.lm.decode import generate
from specdec_playable.lm.kernel import tuning
from specdec_playable.lm.prompts import FORMAT_CHECKS as PROMPTS


def logits(model, ids, isa: str | None) -> np.ndarray:
    tuning.set_int_isa(isa)
    try:
        return model.forward(ids, model.new_cache()).logits
    finally:
        tuning.set_int_isa(None)


def passes(model, ids, isa):
    tuning.set_int_isa(isa)
    try:
        cache = model.new_cache()
        model.forward(ids, cache, logits="none")
        return [model.forward((ids * n)[:n], cache).logits for n in (1, 5, 9, 17, 33)]
    finally:
        tuning.set_int_isa(None)


def main() -> int:
    if not tuning.INT_ISA:
        print("this CPU has no integer tile (neither AVX-512 VNNI nor AVX2)")
        return 1
    f32, q4 = get_model(), get_model("q4")
    print(f"{_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
          f"integer tile: {tuning.INT_ISA}\n")
    print("| prompt | float tiles vs f32 | integer tile vs f32 | integer vs float tiles | greedy differs "
          "(of reply) | largest f32 margin differing |")
    print("|---|---:|---:|---:|---:|---:|")
    worst = {"float": 0.0, "int": 0.0, "margin": 0.0}
    for prompt in PROMPTS:
        ids = f32.tokenizer.chat(prompt)
        text = list(ids) + list(generate(f32, ids, max_new=32).tokens)
        want = f32.forward(text, f32.new_cache()).logits
        flt, itg = logits(q4, text, ""), logits(q4, text, None)
        scale = np.abs(want).max()
        e_f, e_i = np.abs(flt - want).max() / scale, np.abs(itg - want).max() / scale
        e_if = np.abs(itg - flt).max() / scale
        reply = slice(len(ids) - 1, None)
        top2 = np.sort(want[reply], axis=1)[:, -2:]
        margin = top2[:, 1] - top2[:, 0]
        differ = itg[reply].argmax(1) != want[reply].argmax(1)
        largest = float(margin[differ].max()) if differ.any() else 0.0
        worst.update(float=max(worst["float"], e_f), int=max(worst["int"], e_i), margin=max(worst["margin"], largest))
        print(f"| {prompt[:40]} | {e_f:.1e} | {e_i:.1e} | {e_if:.1e} | {int(differ.sum())} of {len(margin)} | "
              f"{largest:.3f} |")
    print("\nPasses after the prompt (largest |difference| / largest |logit|, integer tile vs float32):\n")
    print("| prompt | pass(1) | pass(5) | pass(9) | pass(17) | pass(33) |")
    print("|---|---:|---:|---:|---:|---:|")
    for prompt in PROMPTS:
        ids = f32.tokenizer.chat(prompt)
        want, got = passes(f32, ids, None), passes(q4, ids, None)
        cells = [f"{np.abs(g - w).max() / np.abs(w).max():.1e}" for g, w in zip(got, want)]
        print(f"| {prompt[:40]} | " + " | ".join(cells) + " |")
    print(f"\nworst: float tiles {worst['float']:.1e}, integer tile {worst['int']:.1e} of the largest |logit|; "
          f"largest float32 margin at a differing greedy token {worst['margin']:.3f}")
    print("command: " + " ".join([sys.executable.rsplit('/', 1)[-1], *sys.argv]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
