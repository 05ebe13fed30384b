// NearView (views/deferred.py): tells the server, once, that this slot has come within
// `ahead` pixels of the visible part of the page, so the server builds the part it holds.
// Until the part replaces it, the mark says that the part is on its way.
export function render({ model, el }) {
  const mark = document.createElement('p');
  mark.className = 'sdp-near-mark';
  mark.setAttribute('role', 'status');
  mark.textContent = 'Loading this part of the page…';
  mark.style.cssText = 'margin: 8px 10px; color: var(--sdp-muted); font-size: 14px;';
  el.appendChild(mark);
  if (model.near) return;
  const seen = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) {
      seen.disconnect();
      model.near = true;
    }
  }, { rootMargin: `${model.ahead}px 0px ${model.ahead}px 0px` });
  seen.observe(mark);
  model.on('remove', () => seen.disconnect());
}
