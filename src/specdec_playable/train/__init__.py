"""Training the draft head (``lm.head``), one module per stage: :mod:`.corpus` (sources,
licences, the overlap check, the held-out split by prompt, the self-distillation corpus and its
loops), :mod:`.features` (the target's layers for every token, float16 shards on disk),
:mod:`.loop` (JAX + optax, checkpointed), :mod:`.evaluate` (with the numpy serving head),
:mod:`.ship` (the asset and its provenance) and :mod:`.cli` (``python -m specdec_playable.train``).

Serving never imports this package, and JAX and optax (the ``train`` extra) are imported only
here, inside the functions that need them.
"""
