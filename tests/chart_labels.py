"""Where the browser drew every text label of a Bokeh figure, for the label-layout tests.

:func:`drawn_labels` reads, for a figure named on the page, the box of every text
glyph row and every ``Label`` annotation exactly as BokehJS painted it (the views'
own screen positions, anchors and measured text sizes), and the figure's plotting
frame, and the box of every bar (``VBar``, ``HBar``, ``Quad`` rows that are drawn), and
every line drawn across the plot (``Line``, ``MultiLine`` and ``Step`` glyphs, and ``Span``
annotations), as screen polylines, and every marker (``Scatter`` rows) with its size and the
order it is painted in.
:func:`label_problems` lists the labels that stick out of the frame, overlap another
label, are wider than the bar they label (a row of a source that draws both bars and
labels must sit wholly inside its own bar or wholly beside it), or cover a bar of a
chart (``VBar``/``HBar``) that they do not label. :func:`crossed_labels` lists the labels a
drawn line runs through (a chart drawing over its own words). A label whose text is empty or
fully transparent is not drawn and is ignored. :func:`covered_markers` lists the markers that
a marker painted after them, with an opaque fill, hides half of or more (a dot near the centre of
a square).
"""

from __future__ import annotations

_DRAWN = """name => {
  const model = Bokeh.documents[0].get_model_by_name(name);
  const pv = Bokeh.index.find_one(model);
  if (!pv || !pv.frame) return null;
  const f = pv.frame.bbox;
  const out = {frame: {left: f.left, top: f.top, right: f.right, bottom: f.bottom,
                       width: f.width, height: f.height}, labels: [], bars: [], lines: [], markers: []};
  for (const [, rv] of pv.renderer_views) {
    if (!rv.model.visible) continue;
    const gv = rv.glyph;
    if (rv.model.type === 'Span' && rv.model.location != null && rv.model.line_alpha > 0
        && rv.model.line_color != null) {
      const across = rv.model.dimension === 'width';
      const scale = across ? pv.frame.y_scale : pv.frame.x_scale;
      const at = rv.model.location_units === 'screen' ? rv.model.location : scale.compute(rv.model.location);
      out.lines.push({what: `Span ${rv.model.name || ''}`.trim(),
                      points: across ? [[f.left, at], [f.right, at]] : [[at, f.top], [at, f.bottom]]});
    }
    if (gv && ['Line', 'Step'].includes(gv.model.type) && gv.visuals.line.doit) {
      out.lines.push({what: gv.model.type + ' ' + (rv.model.data_source.name || ''),
                      points: Array.from(gv.sx, (x, i) => [x, gv.sy[i]])});
    }
    if (gv && gv.model.type === 'MultiLine') {
      for (let i = 0; i < gv.data_size; i++) {
        if (!gv.visuals.line.v_doit(i)) continue;
        const xs = gv.sxs.get(i), ys = gv.sys.get(i);
        out.lines.push({what: 'MultiLine ' + (rv.model.data_source.name || '') + ` row ${i}`,
                        points: Array.from(xs, (x, j) => [x, ys[j]])});
      }
    }
    if (gv && ['VBar', 'HBar', 'Quad'].includes(gv.model.type)) {
      for (let i = 0; i < gv.data_size; i++) {
        if (!gv.visuals.fill.v_doit(i) && !gv.visuals.line.v_doit(i)) continue;
        const l = Math.min(gv.sleft[i], gv.sright[i]), r = Math.max(gv.sleft[i], gv.sright[i]);
        const t = Math.min(gv.stop[i], gv.sbottom[i]), b = Math.max(gv.stop[i], gv.sbottom[i]);
        if (!isFinite(l + r + t + b) || r - l < 0.5 || b - t < 0.5) continue;
        out.bars.push({kind: gv.model.type, source: rv.model.data_source.name || '', row: i,
                       left: l, right: r, top: t, bottom: b});
      }
    }
    if (gv && gv.model.type === 'Scatter') {
      // Every marker drawn, its box (the outline included), and whether its fill hides what
      // was drawn before it: renderers paint in the order of the figure's list.
      const order = pv.model.renderers.indexOf(rv.model);
      for (let i = 0; i < gv.data_size; i++) {
        const fill = gv.visuals.fill.v_doit(i), line = gv.visuals.line.v_doit(i);
        if (!fill && !line) continue;
        const sx = gv.sx[i], sy = gv.sy[i];
        if (!isFinite(sx + sy)) continue;
        const lw = line ? gv.visuals.line.line_width.get(i) : 0;
        const half = gv.size.get(i) / 2 + lw / 2;
        const opaque = fill && gv.visuals.fill.fill_alpha.get(i) >= 0.5;
        out.markers.push({source: rv.model.data_source.name || '', row: i, order,
                          marker: gv.marker.get(i), x: sx, y: sy, half, opaque});
      }
    }
    if (gv && gv.model.type === 'Text') {
      const src = rv.model.data_source.data;
      for (let i = 0; i < gv.data_size; i++) {
        const label = gv.labels[i];
        if (label == null || !gv.visuals.text.v_doit(i)) continue;
        const text = `${label.text}`;
        if (!text.trim()) continue;
        const sx = gv.sx[i] + gv.x_offset.get(i), sy = gv.sy[i] + gv.y_offset.get(i);
        if (!isFinite(sx + sy)) continue;
        const a = gv.anchor_.get(i), w = gv.swidth[i], h = gv.sheight[i];
        const left = sx - a.x * w, top = sy - a.y * h;
        out.labels.push({text, source: rv.model.data_source.name || '', row: i,
                         left, top, right: left + w, bottom: top + h});
      }
    } else if (rv.model.type === 'Label' && rv._rect) {
      const text = rv.model.text;
      if (!text || !text.trim() || rv.model.text_alpha === 0) continue;
      const r = rv._rect;
      const left = r.sx - r.anchor.x * r.width, top = r.sy - r.anchor.y * r.height;
      out.labels.push({text, source: rv.model.name || 'Label', row: 0,
                       left, top, right: left + r.width, bottom: top + r.height,
                       screen: rv.model.x_units === 'screen'});
    }
  }
  return out;
}"""

#: Rounding slack, in pixels: anti-aliased edges of neighbouring labels may touch.
SLACK = 0.5


def drawn_labels(page, figure_name: str) -> dict:
    """The frame and the label boxes of one figure, in canvas pixels (y down)."""
    got = page.evaluate(_DRAWN, figure_name)
    assert got is not None, f"figure {figure_name!r} is not laid out"
    return got


def _meet(a: dict, b: dict) -> bool:
    return (a["left"] < b["right"] - SLACK and b["left"] < a["right"] - SLACK
            and a["top"] < b["bottom"] - SLACK and b["top"] < a["bottom"] - SLACK)


def label_problems(drawn: dict) -> list[str]:
    """What is wrong with the labels of one figure (an empty list when nothing is)."""
    f = drawn["frame"]
    out = []
    labels = drawn["labels"]
    bars = drawn.get("bars", [])
    for lb in labels:
        if (lb["left"] < f["left"] - SLACK or lb["right"] > f["right"] + SLACK
                or lb["top"] < f["top"] - SLACK or lb["bottom"] > f["bottom"] + SLACK):
            out.append(f"{lb['text']!r} ({lb['source']}) sticks out of the plot: "
                       f"{_box(lb)} vs frame {_box(f)}")
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if _meet(a, b):
                out.append(f"{a['text']!r} ({a['source']}) overlaps {b['text']!r} ({b['source']}): "
                           f"{_box(a)} / {_box(b)}")
    for lb in labels:
        own = [b for b in bars if b["source"] == lb["source"] and b["row"] == lb["row"]]
        for b in own:
            inside = lb["left"] >= b["left"] - SLACK and lb["right"] <= b["right"] + SLACK
            beside = lb["left"] >= b["right"] - SLACK or lb["right"] <= b["left"] + SLACK
            if not (inside or beside):
                out.append(f"{lb['text']!r} ({lb['source']}) is wider than its bar: "
                           f"{_box(lb)} vs bar {_box(b)}")
        for b in bars:
            if b["kind"] != "Quad" and b["source"] != lb["source"] and _meet(lb, b):
                out.append(f"{lb['text']!r} ({lb['source']}) covers a bar of {b['source']}: "
                           f"{_box(lb)} / {_box(b)}")
                break
    return out


def _segment_meets(box: dict, a, b, slack: float) -> bool:
    """Whether the segment a-b passes through ``box`` shrunk by ``slack`` (Liang-Barsky)."""
    (x0, y0), (x1, y1) = a, b
    if None in (x0, y0, x1, y1) or any(v != v for v in (x0, y0, x1, y1)):
        return False
    dx, dy = x1 - x0, y1 - y0
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, x0 - (box["left"] + slack)), (dx, box["right"] - slack - x0),
                 (-dy, y0 - (box["top"] + slack)), (dy, box["bottom"] - slack - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        r = q / p
        if p < 0:
            t0 = max(t0, r)
        else:
            t1 = min(t1, r)
        if t0 > t1:
            return False
    return True


def crossed_labels(drawn: dict, slack: float = 1.0) -> list[str]:
    """The labels a line of the chart runs through (more than ``slack`` px inside the label's box)."""
    out = []
    for lb in drawn["labels"]:
        for line in drawn.get("lines", []):
            pts = line["points"]
            if any(_segment_meets(lb, pts[i], pts[i + 1], slack) for i in range(len(pts) - 1)):
                out.append(f"{lb['text']!r} ({lb['source']}) is crossed by {line['what']}: {_box(lb)}")
                break
    return out


#: A marker with this share of its box (its outline included) under another's fill is hidden.
HIDDEN_SHARE = 0.5
#: How much of a marker's box its filled inside covers, by shape: all of a square's, the square
#: inscribed in a circle, the square inscribed in a diamond; other shapes are not counted as covers.
_FILLED = {"square": 1.0, "circle": 0.5 ** 0.5, "diamond": 0.5}


def covered_markers(drawn: dict) -> list[str]:
    """The markers hidden under the opaque fill of a marker of another source painted after them
    (half their box, their outline included, or more, inside the cover's filled inside). A marker
    drawn at the very spot of its cover is the same point of the data twice (series that all
    start at 1×), shown by the cover, and is not counted."""
    out = []
    markers = drawn.get("markers", [])
    for m in markers:
        for top in markers:
            if (top["order"] <= m["order"] or not top["opaque"] or top["source"] == m["source"]
                    or top["marker"] not in _FILLED):
                continue
            if abs(m["x"] - top["x"]) <= SLACK and abs(m["y"] - top["y"]) <= SLACK:
                continue
            inner = top["half"] * _FILLED[top["marker"]]
            h = m["half"]
            across = [max(0.0, min(m[a] + h, top[a] + inner) - max(m[a] - h, top[a] - inner))
                      for a in ("x", "y")]
            if across[0] * across[1] >= HIDDEN_SHARE * (2 * h) ** 2:
                out.append(f"a {m['marker']} of {m['source']} (row {m['row']}) is hidden under a "
                           f"{top['marker']} of {top['source']} (row {top['row']}) at "
                           f"({m['x']:.0f}, {m['y']:.0f})")
                break
    return out


def _box(b: dict) -> str:
    return f"[{b['left']:.0f}..{b['right']:.0f} x {b['top']:.0f}..{b['bottom']:.0f}]"
