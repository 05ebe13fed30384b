"""Settings of (q, k, c) taken from published or measured systems, each with its source.

A preset only sets what its source gives. Where the source does not state a
value (the acceptance rate ``q`` of the H200 pairs, whose weights were random,
or the draft length ``k`` of most pairs), the preset leaves it as ``None`` and
the visitor's own setting is kept; :attr:`Preset.kept` says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..data import hardware


@dataclass(frozen=True)
class Preset:
    """One real system expressed as the three knobs of the theory.

    Attributes
    ----------
    key : str
        Short identifier (also the widget's name on the page).
    label : str
        What the system is, for a button.
    c : float
        Draft step cost as a fraction of one big-model pass.
    q, k : float or None, int or None
        Acceptance rate and draft length when the source gives them; ``None`` keeps
        the visitor's value.
    source : str
        Where the numbers come from.
    note : str
        What the numbers mean, and what the source does not give.

    Examples
    --------
    >>> p = by_key()["t5"]
    >>> p.c, p.q, p.k, p.kept
    (0.02, 0.75, None, ('k',))
    """

    key: str
    label: str
    c: float
    q: float | None
    k: int | None
    source: str
    note: str

    @property
    def kept(self) -> tuple[str, ...]:
        """Names of the knobs this preset leaves as the visitor set them."""
        return tuple(name for name in ("q", "k") if getattr(self, name) is None)

    def values(self) -> dict:
        """The knobs this preset sets, as keyword arguments for ``param.update``."""
        out = {"c": self.c}
        if self.q is not None:
            out["q"] = self.q
        if self.k is not None:
            out["k"] = self.k
        return out


@lru_cache(maxsize=1)
def all_presets() -> tuple[Preset, ...]:
    """The presets in the order the page shows them (H200 ratios read once from the data)."""
    c_1b = round(hardware.draft_cost_ratio("llama-1b-shape"), 3)
    c_160m = round(hardware.draft_cost_ratio("tiny-160m-shape"), 3)
    h200 = ("Measured for this project on one NVIDIA H200 (2026-11-30): one decode step of each "
            "model shape, every linear layer replayed as a CUDA graph, median of timed repeats "
            "(assets/pass_cost_h200.csv).")
    random_weights = ("The weights were random, so these timings say nothing about how often the "
                      "small model would guess right.")
    return (
        Preset(
            key="t5", label="T5-XXL drafted by T5-small", c=0.02, q=0.75, k=None,
            source=("Leviathan, Kalman and Matias, “Fast Inference from Transformers via Speculative "
                    "Decoding”, ICML 2023: T5-XXL (11B) translating English to German with greedy "
                    "decoding, drafted by T5-small (77M)."),
            note=("A draft step costs about 2% of a big pass, and about 75% of the drafted tokens "
                  "are accepted."),
        ),
        Preset(
            key="chinchilla", label="Chinchilla 70B with a 4B draft", c=0.13, q=None, k=4,
            source=("Chen, Borgeaud, Irving, Lespiau, Sifre and Jumper, “Accelerating Large Language "
                    "Model Decoding with Speculative Sampling”, 2023: a 4B-parameter draft model for "
                    "Chinchilla 70B, drafting 4 tokens per round."),
            note=("A draft step costs about 13% of a target step. The paper reports speedups per task "
                  "rather than one acceptance rate."),
        ),
        Preset(
            key="h200-1b", label="8B-shape target, 1B-shape draft (H200)", c=c_1b, q=None, k=None,
            source=h200,
            note=f"One 1B-shape step takes {c_1b:.3f} of an 8B-shape step. {random_weights}",
        ),
        Preset(
            key="h200-160m", label="8B-shape target, 160M-shape draft (H200)", c=c_160m, q=None,
            k=None, source=h200,
            note=f"One 160M-shape step takes {c_160m:.3f} of an 8B-shape step. {random_weights}",
        ),
    )


def by_key() -> dict[str, Preset]:
    """The presets keyed by :attr:`Preset.key`."""
    return {p.key: p for p in all_presets()}
