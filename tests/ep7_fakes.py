"""Runs of the real decoders' shape, made without the model, for Episode 7's state and view tests.

:func:`fake_comparison` writes the events a speculative run and a plain run would have
written (the same rows, in the same order, as ``lm.decode``), from a list of rounds
``(drafted, accepted)`` and chosen pass times, so sentences and builders can be checked over
many runs in milliseconds.
"""

from __future__ import annotations

import numpy as np

from specdec_playable.sim.events import Event, Events
from specdec_playable.lm.compare import Comparison
from specdec_playable.lm.decode import Generation
from specdec_playable.lm.race import Turns


def _text(pos: int) -> str:
    return f" t{pos}"


def fake_spec(rounds, *, prefill_ms=200.0, verify_ms=90.0, guess_ms=0.05, step_idle_ms=40.0,
              k=4, prompt_len=20, texts=_text, stopped="budget", temperature=0.0) -> Generation:
    """A speculative run: ``rounds`` is a list of (drafted, accepted); drafted 0 is a plain pass."""
    rows = [("big", "generate", 0, 0, texts(0), 0.0, prefill_ms)]
    out, marks = [0], ["generate"]
    t = prefill_ms
    proposed = accepted = rejected = 0
    judged_at, accepted_at = np.zeros(k, int), np.zeros(k, int)
    for rnd, (d, a) in enumerate(rounds, start=1):
        pos0 = len(out)
        if d == 0:
            rows.append(("big", "generate", rnd, pos0, texts(pos0), t, t + step_idle_ms))
            t += step_idle_ms
            out.append(pos0)
            marks.append("generate")
            continue
        for i in range(d):
            rows.append(("draft", "draft", rnd, pos0 + i, f" g{pos0 + i}", t, t + guess_ms))
            t += guess_ms
        vs, ve = t, t + verify_ms
        rows.append(("big", "verify", rnd, pos0, "", vs, ve))
        for i in range(a):
            rows.append(("big", "accepted", rnd, pos0 + i, texts(pos0 + i), ve, ve))
        if a < d:
            rows.append(("big", "rejected", rnd, pos0 + a, f" g{pos0 + a}", ve, ve))
            for i in range(a + 1, d):
                rows.append(("big", "discarded", rnd, pos0 + i, f" g{pos0 + i}", ve, ve))
            rows.append(("big", "correction", rnd, pos0 + a, texts(pos0 + a), ve, ve))
            last = "correction"
            rejected += 1
        else:
            rows.append(("big", "bonus", rnd, pos0 + d, texts(pos0 + d), ve, ve))
            last = "bonus"
        judged_at[:min(a + 1, d)] += 1
        accepted_at[:a] += 1
        proposed += d
        accepted += a
        out.extend(range(pos0, pos0 + a + 1))
        marks.extend(["accepted"] * a + [last])
        t = ve
    with np.errstate(invalid="ignore", divide="ignore"):
        accept_at = (accepted_at / judged_at).astype(float)
    return Generation(
        prompt=tuple(range(prompt_len)), tokens=tuple(out), text="".join(texts(p) for p in range(len(out))),
        marks=tuple(marks), events=Events.of([Event(*r) for r in rows]), draft="lookup", k=k, temperature=temperature,
        top_p=1.0, prefill_ms=prefill_ms, wall_ms=t + 0.5, passes=len(rounds),
        draft_ms=sum(d for d, _ in rounds) * guess_ms, proposed=proposed, accepted=accepted,
        rejected=rejected, accept_at=accept_at, stopped=stopped)


def fake_plain(n_tokens: int, *, prefill_ms=200.0, step_ms=40.0, texts=_text, prompt_len=20,
               stopped="budget", temperature=0.0) -> Generation:
    """A plain run of ``n_tokens``: the prompt's pass, then one pass per token."""
    rows = [("big", "generate", 0, 0, texts(0), 0.0, prefill_ms)]
    t = prefill_ms
    for pos in range(1, n_tokens):
        rows.append(("big", "generate", pos, pos, texts(pos), t, t + step_ms))
        t += step_ms
    return Generation(
        prompt=tuple(range(prompt_len)), tokens=tuple(range(n_tokens)),
        text="".join(texts(p) for p in range(n_tokens)), marks=("generate",) * n_tokens,
        events=Events.of([Event(*r) for r in rows]), draft="none", k=0, temperature=temperature, top_p=1.0,
        prefill_ms=prefill_ms, wall_ms=t + 0.5, passes=n_tokens - 1, draft_ms=0.0, proposed=0,
        accepted=0, rejected=0, accept_at=np.zeros(0), stopped=stopped)


def fake_turns(spec: Generation, plain: Generation) -> Turns:
    """The turns a race of these two runs takes: each speculative round, then plain steps until
    the plain run has caught up (as ``lm.race`` schedules them), timed from the runs' events."""

    def per_round(run):
        ms, tok, pos = {}, {}, {}
        for lane, kind, rnd, s, e in zip(run.events.lane.tolist(), run.events.kind.tolist(),
                                         run.events.round.tolist(), run.events.start_ms.tolist(),
                                         run.events.end_ms.tolist()):
            if kind in ("generate", "verify", "draft"):
                ms[rnd] = ms.get(rnd, 0.0) + (e - s)
            if kind == "draft":
                pos[rnd] = pos.get(rnd, 1) + 1
            if kind in ("generate", "accepted", "correction", "bonus"):
                tok[rnd] = tok.get(rnd, 0) + 1
        # The bookkeeping after a run's last pass (the fakes' 0.5 ms) is part of its last turn,
        # as a real run's is: the decoding turns then add up to the run's decoding time.
        last = max(ms)
        ms[last] += run.wall_ms - float(run.events.end_ms.max())
        return [(r, ms[r], tok.get(r, 0), 0 if r == 0 else pos.get(r, 1)) for r in sorted(ms)]

    srounds, prounds = per_round(spec), per_round(plain)
    rows = [("spec", *srounds[0]), ("plain", *prounds[0])]
    written = {"spec": srounds[0][2], "plain": prounds[0][2]}
    si, pi = 1, 1
    while si < len(srounds) or pi < len(prounds):
        me = "spec" if pi >= len(prounds) or (si < len(srounds) and written["spec"] <= written["plain"]) \
            else "plain"
        r = srounds[si] if me == "spec" else prounds[pi]
        rows.append((me, *r))
        written[me] += r[2]
        si, pi = (si + 1, pi) if me == "spec" else (si, pi + 1)
    return Turns.from_rows(rows)


def fake_comparison(rounds, *, verify_ms=90.0, step_ms=40.0, guess_ms=0.05, k=4, texts=_text,
                    temperature=0.0, phase="done", turns=True) -> Comparison:
    """A finished comparison whose plain run wrote the same tokens, one pass each, with the turns
    a race of the two takes (``turns=False``: a comparison recorded before the race)."""
    spec = fake_spec(rounds, verify_ms=verify_ms, guess_ms=guess_ms, step_idle_ms=step_ms, k=k,
                     texts=texts, temperature=temperature)
    plain = fake_plain(len(spec.tokens), step_ms=step_ms, texts=texts, temperature=temperature)
    return Comparison(phase, spec, plain, fake_turns(spec, plain) if turns else None)
