"""From logits to tokens: temperature and top-p. The speculative keep-or-replace rule itself is
written once, in :mod:`sim.sampling` (``verify_chain``), for the simulation and the real model alike.

The forward pass is float32; the probabilities here are float64 so that a cumulative sum over
49,152 entries stays exact enough for a chi-square test over tens of thousands of draws.
"""

from __future__ import annotations

import numpy as np

from ..sim import sampling as rule

TEMPERATURE_MAX = 10.0


def probabilities(logits: np.ndarray, temperature: float, top_p: float = 1.0) -> np.ndarray:
    """Softmax of ``logits / temperature`` (float64), kept to the smallest top-p nucleus.

    Parameters
    ----------
    logits : numpy.ndarray, shape (vocab,) or (n, vocab)
    temperature : float
        > 0 (greedy decoding does not call this).
    top_p : float
        In (0, 1]; 1 keeps every token.
    """
    z = np.asarray(logits, dtype=np.float64) / float(temperature)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    if top_p < 1.0:
        p = np.apply_along_axis(_nucleus, -1, p, top_p) if p.ndim > 1 else _nucleus(p, top_p)
    return p


def _nucleus(p: np.ndarray, top_p: float) -> np.ndarray:
    order = np.argsort(-p, kind="stable")
    cum = np.cumsum(p[order])
    keep = int(np.searchsorted(cum, top_p)) + 1  # the smallest set whose mass reaches top_p
    out = np.zeros_like(p)
    out[order[:keep]] = p[order[:keep]]
    return out / out.sum()


def draw(p: np.ndarray, rng: np.random.Generator) -> int:
    """One token from the distribution ``p`` (one uniform from ``rng``)."""
    return int(rule.draw(p, rng.random()))
