"""The kernel's fixed shapes: vector lanes, panel width, the largest group of positions a tile holds
in registers, the chunk of inputs groups share while it is in L1, and the tile flag bits."""

from __future__ import annotations

#: Floats in one vector register (512 bits), and one cache line.
LANES = 16
#: Output rows per panel: four vector registers a position, four cache lines an input.
PANEL = 64
#: Positions of one tile (4 x 6 = 24 accumulators of the 32 vector registers); more positions are
#: split into equal groups of at most this many.
MAX_GROUP = 6
#: The tile flag (bit 5) for a narrow tile on the strips layout: 16 rows of a panel (one vector,
#: one cache line an input) times up to :data:`MAX_GROUP` positions, ``P`` accumulators.
NARROW_FLAG = 32
#: With several groups, inputs per chunk: a panel's chunk (16 KB) stays in L1 while every group
#: uses it.
CHUNK = 64
#: With several groups, blocks (of 32 inputs) per chunk of a weight in GGUF blocks, unpacked once
#: into a float32 scratch panel of :data:`CHUNK` inputs (16 KB) that stays in L1 while every group
#: uses it.
SCRATCH_BLOCKS = CHUNK // 32
