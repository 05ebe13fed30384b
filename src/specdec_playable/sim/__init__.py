"""The simulation: clocks, rounds, Monte Carlo, closed-form theory, trees, sampling, batching.

numpy only: nothing here imports panel, bokeh or param, reads a file or starts a thread, so it runs
the same in a notebook, the command line, a test or a browser worker.
"""

from . import acceptance, batching, clocks, montecarlo, relay, seeds, theory, trees

__all__ = ["acceptance", "batching", "clocks", "montecarlo", "relay", "seeds", "theory", "trees"]
