"""Speculative Decoding, Playable.

An interactive explainer of speculative decoding. The simulation lives in
:mod:`specdec_playable.core` (pure numpy); the episode pages live in
:mod:`specdec_playable.episodes` (Panel).
"""

__version__ = "0.1.0"
