"""Speculative Decoding, Playable.

An interactive explainer of speculative decoding, in rooms whose imports run one way
(sim <- lm <- data <- runtime <- kit <- episodes <- app; ``tests/test_layers.py`` enforces it):

* :mod:`~specdec_playable.sim`: the simulation (theory, Monte Carlo, relay, clocks, trees,
  adaptive k, batching) and the one speculative-sampling rule the real decoder calls too. numpy only.
* :mod:`~specdec_playable.lm`: the real model (SmolLM2-135M-Instruct as a numpy forward pass),
  its tokenizer, drafts, decoders and scoring. numpy, gguf, tokenizers, numba. Neither it nor the
  simulation starts a thread or a process: a run is a loop that yields its passes.
* :mod:`~specdec_playable.data`: one reader per shipped measurement or text in ``assets/``.
* :mod:`~specdec_playable.runtime`: what a server needs to run the model for visitors (the job
  queue, model processes, workers, shared results) and the service Protocol the pages depend on.
* :mod:`~specdec_playable.kit`: what the episodes share: the controls of q, k and c, the page
  shell, figures, the run follower, words, theme, JavaScript and CSS, the site's own pages.
* :mod:`~specdec_playable.episodes`: one package per episode (state, view, words, page, practice,
  stylesheet) and the registry of their records.
* :mod:`~specdec_playable.app`: the command line, the site, the static export; it builds the real
  service and hands it to the pages.

:mod:`specdec_playable.shipped` locates the ``assets/`` folder for every room.

Vocabulary
----------
One name per concept, the same in code and on every page:

* **big model** (the target): the model whose text is kept; **draft**: the cheap guesser. A
  **draft** object (:class:`lm.drafts.Draft`) begins a **proposer** per run.
* **q**, the **acceptance rate** ("draft quality q"): of the drafts the big model judged, the share
  it accepted (:class:`sim.acceptance.Acceptance`). Per token, ``q`` is that token's probability
  of being accepted. Never a distribution.
* **p_big(x)** and **p_draft(x)**: the big model's and the draft's next-token distributions.
  Speculative sampling keeps a drafted ``x`` with probability ``min(1, p_big(x) / p_draft(x))``
  and otherwise draws from ``norm(max(0, p_big - p_draft))``; then
  ``q = sum_x min(p_big(x), p_draft(x))`` (``alpha`` in arrays of per-token values).
* **k**, the **draft length**: drafts proposed per round (``sim.validate.K_DEFAULT`` to begin
  with). ``sim.validate.K_MAX`` bounds the
  simulation, ``lm.decode.LM_K_MAX`` the real decoders, ``kit.params.K_SLIDER_MAX`` and
  ``episodes.ep7.state.REAL_K_SLIDER_MAX`` the pages' sliders.
* **c**, the **draft cost**: one draft step's time over one big-model pass.
* a **pass**: one forward pass of the big model; a **round**: draft up to k, verify them in one
  pass, judge. A round's **verdict** marks each draft ``accepted``, ``rejected`` (the first miss)
  or ``discarded`` (after it), and the big model's own token a ``correction`` or a ``bonus``
  (:func:`sim.events.verdict_events`); an :class:`sim.events.Event` records each on a lane.
* **tokens_per_round**: tokens one round decides (accepted drafts + the big model's own token),
  ``E = (1 - q^(k+1)) / (1 - q)`` in theory; **tokens_per_pass**: output tokens written per pass
  after the prefill (an end-of-sequence token ends a run and is not written), what a clock sees.
* **speedup**: plain decoding's time over speculative decoding's for the same tokens,
  ``E / (1 + k c)`` in theory (Leviathan, Kalman and Matias, 2023).
* a **task**: a prepared prompt (:class:`lm.prompts.Task`), Episode 7's are :data:`lm.prompts.TASKS`;
  a draft as the pages offer it is a :class:`lm.registry.DraftSpec`.
* a **measured text** (:class:`data.measured.MeasuredText`) is shipped; a **text measurement**
  (:class:`lm.measure.TextMeasurement`) is made now by the model.
"""

__version__ = "0.1.0"
