"""Pure-numpy simulation core: clocks, rounds, Monte-Carlo and closed-form theory.

Nothing in this package imports panel, bokeh or param, so it runs the same in a
notebook, the command line, a test or a browser worker.
"""

from . import batching, clocks, hardware, montecarlo, relay, texts, theory, trees

__all__ = ["batching", "clocks", "hardware", "montecarlo", "relay", "texts", "theory", "trees"]
