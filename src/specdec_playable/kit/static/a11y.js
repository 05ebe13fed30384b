// Accessible names for the controls Panel and Bokeh render without one (see kit/a11y.py):
// each slider handle after its slider's title, each spinner button "increase"/"decrease", and
// each button of a chart's toolbar after its tool (Bokeh draws them as focusable divs with only
// a title): role "button", the tool's name, and whether a toggled tool is on.
// And exact values: noUiSlider writes a handle's aria-valuenow (and -min, -max) rounded to one
// decimal, so a slider at 0.75 would be announced as 0.8; each handle gets the slider's own
// numbers instead, on every update.
// A slider with the CSS class sdp-shown-value is announced by the value its title shows.

const SETTLE_MS = 500;
const SETTLE_RUNS = 20;
const LATER_MS = 3000;

// A number as a screen reader should read it: exact, without floating-point dust.
function exact(x) {
  return String(Number(Number(x).toPrecision(12)));
}

function exactValues(target) {
  const api = target.noUiSlider;
  if (!api || target.__sdp_aria === api) return;
  target.__sdp_aria = api;
  const update = () => {
    const raw = api.get(true);
    const values = Array.isArray(raw) ? raw : [raw];
    const range = api.options.range;
    const handles = target.querySelectorAll('.noUi-handle');
    handles.forEach((h, i) => {
      h.setAttribute('aria-valuemin', exact(range.min));
      h.setAttribute('aria-valuemax', exact(range.max));
      if (values[i] !== undefined) h.setAttribute('aria-valuenow', exact(values[i]));
    });
    if (shown) requestAnimationFrame(announceShown);
  };
  // A slider whose handle moves over stops (Episode 8's batch sizes, powers of two) is announced
  // by the value its title shows, once the title has been redrawn for the new position.
  const root = target.getRootNode();
  const shown = root.host && root.host.classList.contains('sdp-shown-value');
  const announceShown = () => {
    const v = root.querySelector('.bk-slider-value');
    const text = v ? v.textContent.trim() : '';
    if (!text) return;
    for (const h of target.querySelectorAll('.noUi-handle'))
      if (h.getAttribute('aria-valuetext') !== text) h.setAttribute('aria-valuetext', text);
  };
  api.on('update.sdp', update);
  update();
}

function nameControls() {
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
    for (const t of r.querySelectorAll('.noUi-target')) exactValues(t);
    const what = (r.querySelector('label') || {}).textContent || 'value';
    for (const b of r.querySelectorAll('button.bk-spin-btn-up:not([aria-label])'))
      b.setAttribute('aria-label', 'increase ' + what.trim());
    for (const b of r.querySelectorAll('button.bk-spin-btn-down:not([aria-label])'))
      b.setAttribute('aria-label', 'decrease ' + what.trim());
    for (const b of r.querySelectorAll('.bk-OnOffButton, .bk-ClickButton')) {
      const name = b.getAttribute('title');
      if (name && b.getAttribute('aria-label') !== name) b.setAttribute('aria-label', name);
      if (b.getAttribute('role') !== 'button') b.setAttribute('role', 'button');
      if (b.classList.contains('bk-OnOffButton')) {
        const on = String(b.classList.contains('bk-active'));
        if (b.getAttribute('aria-pressed') !== on) b.setAttribute('aria-pressed', on);
      }
    }
  }
}

export function render({ el }) {
  const box = document.createElement('div');
  box.id = 'sdp_a11y';
  box.setAttribute('aria-hidden', 'true');
  box.style.display = 'none';
  el.appendChild(box);
  nameControls();
  let n = 0;
  const id = setInterval(() => { nameControls(); if (++n >= SETTLE_RUNS) clearInterval(id); }, SETTLE_MS);
  if (!window.__sdp_a11y_focus) {
    window.__sdp_a11y_focus = true;
    document.addEventListener('focusin', nameControls, true);
    // A toolbar's toggle changes on a click; parts of the page built later (when the visitor
    // scrolls near them, or a run ends) are named on the next slow round.
    document.addEventListener('click', () => setTimeout(nameControls, 50), true);
    setInterval(() => { if (document.visibilityState === 'visible') nameControls(); }, LATER_MS);
  }
}
