"""Train the draft head (lm.head) and ship it: the same as ``python -m specdec_playable.train``.

The pipeline is the package ``specdec_playable.train`` (one module per stage: corpus, features,
loop, evaluate, ship, cli); this file stays so that the commands in the docs, the provenance of
the shipped heads and the missing-head message keep working. ``--help`` lists every option.

    .venv/bin/python scripts/train_draft_head.py                 # everything (under an hour)
    .venv/bin/python scripts/train_draft_head.py --tiny          # a smoke run (the CI test's)
    .venv/bin/python scripts/train_draft_head.py --measure-cost  # the shipped head's cost, again
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from specdec_playable.train.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
