// LiveHTML (kit/livehtml.py): a block of trusted, already-escaped HTML that is
// swapped in place whenever the server sends a new `html`.
export function render({ model, el }) {
  const box = document.createElement('div');
  box.innerHTML = model.html;
  el.appendChild(box);
  model.on('html', () => { box.innerHTML = model.html; });
}
