"""Per-episode state: one ``param.Parameterized`` class per episode, no Panel imports.

Every parameter has bounds, a label and a doc string; derived values are
recomputed from the core when a parameter changes.
"""
