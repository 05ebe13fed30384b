"""Why checking is nearly free with float32 weights on this CPU and not with 4-bit ones: the
roofline in words, every figure computed from the measured pass times it describes.

A pass over ``n`` positions reads every weight once and does ``2 n`` flops with each (a multiply
and an add per position). Float32 weights are 4 bytes: the reading dominates and the time hardly
grows with ``n``. llama.cpp's 4-bit weights (Q4_1, about 5 bits a weight with their scales) read
several times fewer bytes, so one position is quick, but every weight is unpacked again for every
position, so the arithmetic soon sets the time.
"""

from __future__ import annotations

from ..data import hardware
from ..sim.batching import PassTimeCurve
from .page import esc

#: The pass size the sentences compare against one position (a chain of k = 4 drafts).
N_CHECK = 5


def _times(curve: PassTimeCurve, n: int = N_CHECK) -> tuple[float, float]:
    return float(curve.time_ms(1)), float(curve.time_ms(n) / curve.time_ms(1))


def roofline_html(cpu_curve: PassTimeCurve, h200: PassTimeCurve) -> str:
    """Two paragraphs: this CPU's float32 pass against llama.cpp's 4-bit one, and the H200. (The
    sentence above them on the page says where ``cpu_curve`` was measured.)"""
    meta, llama_meta = hardware.load_cpu_meta(), hardware.load_llamacpp_meta()
    f_bytes, q_bytes = int(meta["weight_bytes"]), int(llama_meta["file_bytes"])
    f1, f5 = _times(cpu_curve)
    q1, q5 = _times(hardware.llamacpp_curve())
    _, h5 = _times(h200)
    gbps = f_bytes / (f1 / 1e3) / 1e9
    cheaper = "cheaper" if q1 < f1 else "no cheaper"
    verdict = ("so checking 5 positions costs about what writing one does" if f5 < 1.3 else
               "so checking 5 positions costs less than two steps" if f5 < 2.0 else
               "yet checking 5 positions still costs two steps or more")
    if q5 > f5:
        bound = (f"arithmetic, not reading, sets its time, and a verify pass is dearer there "
                 f"({q5:.2f}× against {f5:.2f}×)")
    else:
        bound = f"which here is no dearer than float32's {f5:.2f}×"
    return (
        f'<p class="sdp-econ" id="roofline-words"><strong>Why the two CPU curves differ.</strong> '
        f"A decoding step reads every weight once: {f_bytes / 1e6:.0f} MB of float32 weights in "
        f"{f1:.1f} ms here, at least {gbps:.0f} GB/s. Scoring more positions "
        f"reuses each weight while it is in the processor's cache, 2 flops per position, so the "
        f"extra positions cost arithmetic but no extra reading: a pass over {N_CHECK} positions "
        f"takes {f5:.2f}× a step, {verdict}.</p>"
        f'<p class="sdp-econ">The hollow squares are the same model run by llama.cpp from its '
        f"4-bit file ({q_bytes / 1e6:.0f} MB, {f_bytes / q_bytes:.1f}× fewer bytes), measured on "
        f"{esc(_machine(llama_meta))}. One position is {cheaper} ({q1:.1f} ms), but every weight is "
        f"unpacked again for every position, so {N_CHECK} positions take {q5:.2f}× its step: "
        f"{bound}. On the H200 a pass over {N_CHECK} takes {h5:.2f}× one.</p>")


def _machine(meta: dict) -> str:
    return (f"the machine that built this page, a {meta.get('cores', '?')}-core "
            f"{meta.get('cpu') or 'CPU'} on {meta.get('date_utc', '')} with {_threads(meta)} "
            f"and llama-cpp-python {meta.get('llama_cpp_python', '?')}")


def _threads(meta: dict) -> str:
    n = int(meta.get("threads", 1))
    return f"{n} thread{'s' if n != 1 else ''}"


__all__ = ["N_CHECK", "roofline_html"]
