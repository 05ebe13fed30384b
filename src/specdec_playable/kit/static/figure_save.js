// FigureSaver (kit/figures.py): the "Save: PNG SVG" buttons under every figure. A button
// names its figure (data-plot, the Bokeh model's name) and the file (data-file, the figure's
// anchor); this finds the figure's view, has BokehJS draw it as it is on screen into a PNG or,
// with its SVG backend, an SVG, and saves the file. Touches no model property. One listener per
// page answers every button, including those of parts built later.

function findView(name) {
  const models = new Set();
  for (const doc of Bokeh.documents) {
    const m = doc.get_model_by_name(name);
    if (m) models.add(m);
  }
  const seen = new Set();
  const todo = [...Bokeh.index.roots];
  while (todo.length) {
    const v = todo.pop();
    if (!v || seen.has(v)) continue;
    seen.add(v);
    if (models.has(v.model)) return v;
    if (typeof v.children === 'function') for (const c of v.children()) todo.push(c);
  }
  return null;
}

async function save(kind, name, file) {
  const view = findView(name);
  if (!view || typeof view.export !== 'function') return;
  const blob = await view.export(kind, true).to_blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = `${file}.${kind}`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function onClick(event) {
  const button = event.composedPath().find((el) => el instanceof HTMLElement && el.dataset.sdpSave);
  if (!button) return;
  event.preventDefault();
  const { sdpSave, plot, file } = button.dataset;
  if (sdpSave !== 'png' && sdpSave !== 'svg') return;
  save(sdpSave, plot, file).catch((err) => console.warn('could not save the figure', err));
}

export function render() {
  if (window.__sdp_figure_saver) return;
  window.__sdp_figure_saver = true;
  document.addEventListener('click', onClick);
}
