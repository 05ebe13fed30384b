"""State of Episode 8: busy accelerators and token trees.

Part 1 prices speculative decoding at batch size ``batch`` with the measured H200
pass-time curve (``sim.batching``): every derived value is a pure function of the
knobs, recomputed when one moves. Part 2 compares a chain of drafts with a tree of
the same number of verified positions (``sim.trees``): the closed form, and fresh
Monte-Carlo rounds on every change from this object's own generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import param

from ...kit.params import C, K, K_SLIDER_MAX, Q, control, unlocked
from ...kit.cpu import cpu_passes, passes_for
from ...data import hardware
from ...sim import batching, theory, trees

#: Batch sizes the chart spans (every integer; the axis is logarithmic).
BATCH_MAX = 256
BATCHES = np.arange(1, BATCH_MAX + 1)
BATCHES.setflags(write=False)
#: Longest draft searched for the best k (as in Episodes 3 and 5).
#: Tree shapes offered: candidates per level and levels.
WIDTH_MAX, DEPTH_MAX = 4, 8
#: Monte-Carlo rounds per tree shape on every change.
N_ROUNDS = 2000
#: Acceptance rates the tree chart is drawn at.
Q_GRID = np.linspace(0.0, 1.0, 101)
Q_GRID.setflags(write=False)


@lru_cache(maxsize=1)
def h200_curve() -> batching.PassTimeCurve:
    """The 8B-shape H200 pass-time curve and its roofline fit, read once and shared."""
    return hardware.measured_curve("llama-8b-shape", "gemm-cudagraph")


def cpu_curve() -> batching.PassTimeCurve:
    """The real model's pass times on this CPU: this server's own measurement once its model
    process has made it, else the shipped one (:func:`.cpu.cpu_passes`)."""
    return cpu_passes().curve


def format_curves(cpu) -> dict:
    """The real model's two CPU curves, float32 and the file's 4-bit blocks (``"f32"``, ``"q4"``):
    ``cpu`` (the page's curve: this server's record, or the shipped float32 one; see
    :func:`.cpu.cpu_passes`) in its own format, the other format this server's record of it if a
    model process of that format has measured, else as shipped (:func:`.cpu.passes_for`)."""
    return {fmt: passes_for(cpu, fmt).curve for fmt in ("f32", "q4")}


def real_tree_table():
    """Chain against trees with the real model, as measured (``data.tree_table``); shared."""
    from ...data.tree_table import load_tree_vs_chain

    return load_tree_vs_chain()


@lru_cache(maxsize=1)
def real_tree_step():
    """One real tree verify pass, as recorded (``lm.tree_step``); read once and shared."""
    from ...data.tree_example import load_tree_step_example

    return load_tree_step_example()[0]


def real_tree_drafts() -> tuple[str, str]:
    """The drafts the real-tree table and the drawn step were measured with, in words."""
    from ...data.tree_example import load_tree_step_example
    from ...data.tree_table import draft_words

    return draft_words(), draft_words(load_tree_step_example()[1])


@dataclass(frozen=True)
class Anchor:
    """A published measurement of speculation at a batch size, with its source."""

    system: str
    batch: int
    speedup: float
    source: str


#: GPUStack performance lab, Qwen3-8B on one H100 (ShareGPT, mean latency per request): SGLang with
#: Qwen3-8B-FP8 and an EAGLE-3 draft against vLLM without optimisations.
GPUSTACK_SOURCE = ("GPUStack performance lab, “Optimizing Qwen3-8B Latency on NVIDIA H100 GPUs”: "
                   "ShareGPT, mean latency per request. Baseline vLLM without optimisations; "
                   "optimised SGLang with Qwen3-8B in FP8 and an EAGLE-3 draft tree of 16 tokens. "
                   "The optimised runs also change engine and number format, so not all of the gain "
                   "is speculation.")
ANCHORS = tuple(
    Anchor("Qwen3-8B + EAGLE-3, one H100", b, s, GPUSTACK_SOURCE)
    for b, s in ((1, 2.7), (2, 2.4), (4, 2.2), (8, 1.6))
)


class BusyAndTrees(param.Parameterized):
    """Speculation at a batch size, and chains against trees."""

    q = control(Q, label="Acceptance rate q", doc="Probability that one drafted token is "
                "accepted, the same for every user in the batch (0: never, 1: always).")
    k = control(K, doc="Tokens drafted per user per round (a count of tokens); the verify "
                "pass scores k + 1 positions per user.")
    c = control(C, default=0.05, step=0.005, why="a batch's draft is a small model's step over "
                "the same batch, dearer than a draft head and cheaper than Episode 3's",
                doc="Time of one draft step over the batch, in big-model passes over the same batch: "
                "0.05 means a twentieth of a pass.")
    batch = param.Integer(
        default=1, bounds=(1, BATCH_MAX), label="Batch size B",
        doc="Users decoded together in every pass (a count of users): a plain step scores B "
            "positions, a verify pass B × (k + 1).")

    tree_q = control(Q, default=0.50, label="Acceptance rate q (each candidate)",
                     why="a tree pays where a chain's guesses often miss, so its part opens at a "
                     "coin toss", doc="Probability that one drafted candidate is accepted, given "
                     "its parent was, independently of every other candidate (0: never, 1: always).")
    width = param.Integer(
        default=2, bounds=(1, WIDTH_MAX), label="Candidates per level w",
        doc="How many guesses the tree makes at each position (a count of candidates); 1 is a chain.")
    depth = param.Integer(
        default=3, bounds=(1, DEPTH_MAX), label="Levels d",
        doc="How many positions ahead the tree guesses (a count of tokens).")
    resimulate = param.Event(
        label=f"Run {N_ROUNDS:,} new rounds",
        doc="Simulate fresh rounds for the chain and the tree at the same settings.")

    chain_sim = param.ClassSelector(class_=trees.TreeSimulation, constant=True,
                                    doc="Latest Monte-Carlo rounds of the chain.")
    tree_sim = param.ClassSelector(class_=trees.TreeSimulation, constant=True,
                                   doc="Latest Monte-Carlo rounds of the tree.")

    def __init__(self, *, rng=None, **params):
        super().__init__(**params)
        self._rng = np.random.default_rng(rng)
        self._cpu = cpu_passes()  # one curve for the session's whole page
        self._simulate_trees()

    # --- part 1: the busy accelerator ---------------------------------------------------------

    @property
    def curve(self) -> batching.PassTimeCurve:
        return h200_curve()

    @property
    def cpu_curve(self) -> batching.PassTimeCurve:
        return self._cpu.curve

    @property
    def cpu_q4(self):
        """The 4-bit curve's passes with their provenance (:func:`.cpu.passes_for`)."""
        return passes_for(self._cpu, "q4")

    @property
    def cpu_formats(self) -> dict:
        """The CPU's float32 and 4-bit curves (:func:`format_curves`)."""
        return format_curves(self._cpu)

    @property
    def cpu_passes(self):
        """This session's CPU pass times and where they were measured (:class:`.cpu.CpuPasses`)."""
        return self._cpu

    @property
    def costs(self) -> batching.BatchCosts:
        """The chosen k at every batch size of the chart."""
        return batching.batch_costs(self.q, self.k, self.c, BATCHES, self.curve)

    @property
    def best(self) -> batching.BestK:
        """The best draft length at every batch size of the chart."""
        return batching.best_k_per_batch(self.q, self.c, BATCHES, self.curve, k_max=K_SLIDER_MAX)

    @property
    def here(self) -> batching.BatchCosts:
        """Costs at the chosen batch size (scalar arrays)."""
        return batching.batch_costs(self.q, self.k, self.c, self.batch, self.curve)

    @property
    def break_even_batch(self) -> int | None:
        """Smallest batch (up to BATCH_MAX) at which the chosen k is slower than plain decoding."""
        return batching.break_even_batch(self.q, self.k, self.c, self.curve, BATCH_MAX)

    @property
    def effective_cost(self) -> float:
        """The draft cost Episode 5's map would need to show this batch's speedup."""
        return float(batching.effective_cost(self.k, self.c, self.batch, self.curve))

    # --- this server's CPU, one user ---------------------------------------------------------

    @property
    def cpu(self) -> batching.BatchCosts:
        """The same q, k, c for one user, priced with the real model's measured CPU pass times."""
        return batching.batch_costs(self.q, self.k, self.c, 1, self.cpu_curve)

    @property
    def cpu_measured(self) -> bool:
        """Whether a pass over k + 1 positions was measured on the CPU (else it is interpolated)."""
        return bool(np.isin(self.k + 1, self.cpu_curve.n_positions))

    @property
    def cpu_break_even_q(self) -> float:
        """The acceptance rate the CPU needs at this k and c just to break even (NaN: none does)."""
        return batching.break_even_q(self.k, self.c, 1, self.cpu_curve)

    # --- part 2: chains and trees -------------------------------------------------------------

    @property
    def positions(self) -> int:
        """Positions one verify pass scores besides the last accepted token (the same for both)."""
        return self.width * self.depth

    @property
    def tree(self) -> np.ndarray:
        return trees.spine_tree(self.width, self.depth)

    @property
    def chain(self) -> np.ndarray:
        return trees.chain(self.positions)

    def tree_curves(self) -> tuple[np.ndarray, np.ndarray]:
        """Expected tokens per verify pass over :data:`Q_GRID`: (chain, tree)."""
        tree = self.tree
        chain = theory.expected_tokens_per_round(Q_GRID, self.positions)
        return chain, np.array([trees.expected_tokens(tree, q) for q in Q_GRID])

    @property
    def chain_theory(self) -> float:
        return trees.expected_tokens(self.chain, self.tree_q)

    @property
    def tree_theory(self) -> float:
        return trees.expected_tokens(self.tree, self.tree_q)

    @param.depends("tree_q", "width", "depth", "resimulate", watch=True)
    def _simulate_trees(self) -> None:
        chain_rng, tree_rng = self._rng.spawn(2)
        with unlocked(self):
            self.param.update(
                chain_sim=trees.simulate(self.chain, self.tree_q, N_ROUNDS, rng=chain_rng),
                tree_sim=trees.simulate(self.tree, self.tree_q, N_ROUNDS, rng=tree_rng),
            )


def batching_speedups(s: BusyAndTrees, batches) -> list[float]:
    """The chosen k's speedup at the given batch sizes."""
    costs = s.costs
    return [float(costs.speedup[b - 1]) for b in batches]


def split_rows(s: BusyAndTrees) -> dict:
    """Time per generated token of one user, in ms: plain decoding, and speculation's two parts."""
    h = s.here
    e = float(h.tokens_per_round)
    return dict(
        row=["plain decoding", "speculative"],
        plain=[float(h.plain_step_ms), 0.0],
        draft=[0.0, float(h.draft_ms) / e],
        verify=[0.0, float(h.verify_ms) / e],
    )
