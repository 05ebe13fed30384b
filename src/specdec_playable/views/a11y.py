"""Accessible names for controls that Panel and Bokeh render without one.

Panel 1.10's sliders render a noUiSlider handle (``role="slider"``) with no
accessible name, and Bokeh's number spinners render two empty buttons. Screen
readers announce them as unnamed, and axe-core reports them as serious/critical.
:class:`AccessibleNames` is an invisible component, placed once per page, that
names them in the browser: each handle after its slider's visible title, each
spinner button "increase" or "decrease". It walks every open shadow root, runs at
render, again for a few seconds while the page settles, and on every focus change.
"""

from __future__ import annotations

from panel.reactive import ReactiveHTML

_FIX = """
function sdp_name_controls() {
  const roots = [];
  const walk = (root) => {
    roots.push(root);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  for (const r of roots) {
    const title = r.querySelector('.bk-slider-title');
    const label = title ? title.textContent.split(':')[0].trim() : '';
    for (const h of r.querySelectorAll('.noUi-handle')) {
      if (label && h.getAttribute('aria-label') !== label) h.setAttribute('aria-label', label);
    }
    const input = r.querySelector('input');
    const what = (r.querySelector('label') || {}).textContent || 'value';
    for (const b of r.querySelectorAll('button.bk-spin-btn-up:not([aria-label])'))
      b.setAttribute('aria-label', 'increase ' + what.trim());
    for (const b of r.querySelectorAll('button.bk-spin-btn-down:not([aria-label])'))
      b.setAttribute('aria-label', 'decrease ' + what.trim());
  }
}
"""


class AccessibleNames(ReactiveHTML):
    """Invisible; names unnamed sliders and spinner buttons on the page (see module doc)."""

    _template = '<div id="sdp_a11y" aria-hidden="true" style="display:none"></div>'

    _scripts = {
        "render": _FIX + """
          sdp_name_controls();
          let n = 0;
          const id = setInterval(() => { sdp_name_controls(); if (++n >= 20) clearInterval(id); }, 500);
          if (!window.__sdp_a11y_focus) {
            window.__sdp_a11y_focus = true;
            document.addEventListener('focusin', sdp_name_controls, true);
          }
        """,
    }

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
