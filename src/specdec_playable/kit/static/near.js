// NearView (kit/deferred.py): tells the server, once, that this slot has come within
// `ahead` screen heights of the visible part of the page, so the server builds the part it
// holds before the reader gets there. The root is this page's own document, so the margin
// also holds inside an <iframe> on a course page (an implicit root ignores the margin there).
// Until the part replaces it, the mark says that the part is on its way.
export function render({ model, el }) {
  const mark = document.createElement('p');
  mark.className = 'sdp-near-mark';
  mark.setAttribute('role', 'status');
  mark.textContent = 'Loading this part of the page…';
  mark.style.cssText = 'margin: 8px 10px; color: var(--sdp-muted); font-size: 14px;';
  el.appendChild(mark);
  if (model.near) return;
  const margin = `${Math.round(model.ahead * 100)}%`;
  const seen = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) {
      seen.disconnect();
      model.near = true;
    }
  }, { root: document, rootMargin: `${margin} 0px ${margin} 0px` });
  seen.observe(mark);
  model.on('remove', () => seen.disconnect());
}
