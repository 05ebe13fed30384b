"""Compare two folders of screenshots pixel by pixel and print a table.

Usage: ``.venv/bin/python scripts/pixel_diff.py BEFORE_DIR AFTER_DIR [--out DIFF_DIR]``

For every PNG in either folder it prints the two sizes, how many pixels differ (any
channel by more than ``--tolerance``, default 0), that count as a share of the
image, the largest channel difference, and the bounding box of the differing
region. With ``--out`` it also writes, for each pair that differs, an image with
the differing pixels in red over a faded copy of the "after" shot, to look at.
Exit status: 0 if every pair is identical within the tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class Diff:
    """How two images differ."""

    name: str
    size_before: tuple[int, int] | None
    size_after: tuple[int, int] | None
    changed: int          # differing pixels in the overlapping area, plus the non-overlapping area
    total: int            # pixels of the larger image
    max_delta: int
    box: tuple[int, int, int, int] | None   # (left, top, right, bottom) of the differing pixels

    @property
    def share(self) -> float:
        return self.changed / self.total if self.total else 0.0

    @property
    def same(self) -> bool:
        return self.size_before == self.size_after and self.changed == 0


def _load(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.int16)


def compare(name: str, before: np.ndarray | None, after: np.ndarray | None,
            tolerance: int = 0) -> tuple[Diff, np.ndarray | None]:
    """Differences of two RGB arrays (either may be missing); also the mask of changed pixels."""
    if before is None or after is None:
        present = before if before is not None else after
        h, w = present.shape[:2]
        size = (w, h)
        return Diff(name, size if before is not None else None, size if after is not None else None,
                    h * w, h * w, 255, (0, 0, w, h)), None
    hb, wb = before.shape[:2]
    ha, wa = after.shape[:2]
    h, w = max(hb, ha), max(wb, wa)
    # Pad both to the larger size; padding counts as changed wherever only one image has pixels.
    pad_b = np.full((h, w, 3), -1, dtype=np.int16)
    pad_a = np.full((h, w, 3), -1, dtype=np.int16)
    pad_b[:hb, :wb] = before
    pad_a[:ha, :wa] = after
    delta = np.abs(pad_b - pad_a).max(axis=2)
    outside = (pad_b[..., 0] < 0) != (pad_a[..., 0] < 0)
    mask = (delta > tolerance) | outside
    changed = int(mask.sum())
    box = None
    if changed:
        ys, xs = np.nonzero(mask)
        box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
    inside = ~outside
    max_delta = int(delta[inside].max()) if inside.any() else 0
    return Diff(name, (wb, hb), (wa, ha), changed, h * w, max_delta, box), mask


def highlight(after: np.ndarray, mask: np.ndarray) -> Image.Image:
    """The "after" image faded, with changed pixels in red."""
    h, w = mask.shape
    base = np.full((h, w, 3), 255, dtype=np.uint8)
    ha, wa = after.shape[:2]
    base[:ha, :wa] = (255 - (255 - after.astype(np.uint8)) // 4)
    base[mask] = (220, 0, 0)
    return Image.fromarray(base)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--tolerance", type=int, default=0,
                    help="largest channel difference (0-255) still counted as equal (default 0)")
    ap.add_argument("--out", type=Path, default=None, help="write highlight images of differences here")
    args = ap.parse_args(argv)
    names = sorted({p.name for p in args.before.glob("*.png")} | {p.name for p in args.after.glob("*.png")})
    if not names:
        print("no PNG files found", file=sys.stderr)
        return 2
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    print(f"| image | size before | size after | pixels changed | share | max channel diff | region |")
    print("|---|---|---|---:|---:|---:|---|")
    all_same = True
    for name in names:
        pb, pa = args.before / name, args.after / name
        before = _load(pb) if pb.exists() else None
        after = _load(pa) if pa.exists() else None
        diff, mask = compare(name, before, after, args.tolerance)
        all_same &= diff.same
        size = lambda s: "missing" if s is None else f"{s[0]}x{s[1]}"  # noqa: E731
        print(f"| {name} | {size(diff.size_before)} | {size(diff.size_after)} | {diff.changed:,} | "
              f"{diff.share:.4%} | {diff.max_delta} | {diff.box or ''} |")
        if args.out and mask is not None and diff.changed:
            highlight(after, mask).save(args.out / name)
    return 0 if all_same else 1


if __name__ == "__main__":
    raise SystemExit(main())
