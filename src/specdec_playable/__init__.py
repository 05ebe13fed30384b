"""Speculative Decoding, Playable.

An interactive explainer of speculative decoding, in rooms whose imports run one way
(``tests/test_layers.py`` enforces it):

* :mod:`~specdec_playable.sim`: the simulation (theory, Monte Carlo, relay, clocks, trees,
  sampling, adaptive k, batching). numpy only.
* :mod:`~specdec_playable.lm`: the real model (SmolLM2-135M-Instruct as a numpy forward pass),
  its tokenizer, drafts, decoders and scoring. numpy, gguf, tokenizers.
* :mod:`~specdec_playable.data`: one reader per shipped measurement or text in ``assets/``.
* :mod:`~specdec_playable.state`: one ``param`` class per episode.
* :mod:`~specdec_playable.views`: Panel and Bokeh pieces; :mod:`~specdec_playable.episodes`: pages.
* :mod:`~specdec_playable.serve`: what a server needs and a notebook does not: the job queue,
  model processes, shared results, the site, the command line, export. Pages and state reach it
  only through :mod:`specdec_playable.serve.interface`.

:mod:`specdec_playable.shipped` locates the ``assets/`` folder for every room.
"""

__version__ = "0.1.0"
