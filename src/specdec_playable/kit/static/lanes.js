// The lane player: plays a timeline of boxes on lanes against one wall clock, in the
// browser, with a requestAnimationFrame loop that never calls the server.
//
// This file is the body of the one Bokeh CustomJS of a player (kit/lanes/controls.py).
// It runs when Play, Step or Restart is clicked, when the server replaces bars.data with a
// new timeline, and once when the page has been laid out (the document's document_ready
// event, or the figure's tags changed by the server when the player was built after that
// event): cb_obj is then the click event (whose origin is the button), the bars source, the
// document's event or the figure. Its arguments:
//   bars      ColumnDataSource, one row per box (columns: kit/lanes/timeline.py bar_columns)
//   clocks    ColumnDataSource, one row per lane clock (clock_columns)
//   cursor    ColumnDataSource, one row: the wall-clock cursor (x, label, align, offset, playing)
//   stops     ColumnDataSource, column t: the times the Step button pauses at
//   view      ColumnDataSource, one row: x_end (axis end at rest), window (ms shown while
//             playing; 0 shows the whole run)
//   xr        Range1d, the time axis;  fig  the figure (its width decides which labels fit)
//   play, step, restart   Buttons (step is null when the player has none);  speed  Select
//   opts      numbers and tables named once in Python: speeds {label: sim ms per real ms},
//             styles {status: {fill, line, hatch}}, hatches [pattern of overlay j],
//             min_label_px, flip_at, follow_at, max_step_ms, muted,
//             labels {play, pause}, font (the labels' font family), cursor_label (draw the
//             cursor's time), live (the key of the page's live fields, or ''),
//             open_at_start (a new timeline rests at its start until the first Play or Step)
// Live fields: inside the element [data-sdp-live="<opts.live>"] (anywhere on the page, also
// in a shadow root), an element with data-clock="<ms>" shows the clock, stopped at that
// many ms; one with data-after="<ms>" shows only from then on, data-before="<ms>" only until.
// A frame hook is appended to this file: it defines sdp_frame(t), run at the end of every
// frame for the page's own elements outside the figure, with `state`, sdp_total() and
// findDeep(sel) in scope. A hook only mutates the DOM or sources in place and never assigns a model
// property, so no frame reaches the server.
//
// Labels are fitted to the figure as laid out: a box's label shows only where its measured
// text fits the box, and a clock's label sits on whichever side of its mark has room; a
// change of the figure's size draws the frame again.
// Pitfalls handled: column arrays are changed in place and announced with change.emit()
// (assigning .data would sync to the server every frame); the axis moves with
// {sync: false}; zero-width boxes hide their outlines through the alpha column; elapsed
// wall time, clamped, drives the clock; prefers-reduced-motion jumps straight to the target.

/* global bars, clocks, cursor, stops, view, xr, fig, play, step, restart, speed, opts, cb_obj, sdp_frame */

const state = bars.__sdp || (bars.__sdp = {t: 0, playing: false, last: null, raf: null, until: 0,
  played: false});
const reduce = window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches;
const EPS = 1e-6;
const FIT_TRIES = 300;   // animation frames (about 5 s) to wait for the figure's layout
const LABEL_PAD_PX = 4;  // a box's label needs this much room beyond its text (2 px a side)

function sdp_total() {
  let m = 0;
  for (const e of bars.data.end) m = Math.max(m, e);
  return m;
}

// The range a finished run is shown in: the whole run, unless the figure is too narrow for
// the labels of the boxes whose status is in opts.rest_labels (a phone); then the end of
// the run, as much of it as keeps every one of those labels inside its box.
function restRange(full) {
  const pv = figView();
  if (!pv || !opts.rest_labels.length) return [0, full];
  const d = bars.data;
  let need = 0;                                // screen px per ms the kept labels need
  for (let i = 0; i < d.start.length; i++) {
    const w = d.label_end[i] - d.start[i];           // the label's room: start..label_end
    if (w <= 0 || !d.label_a[i] || !opts.rest_labels.includes(d.status[i])) continue;
    const px = Math.max(opts.min_label_px, textWidth(d.label_a[i], d.label_size[i], 'bold') + LABEL_PAD_PX);
    need = Math.max(need, px / w);
  }
  const span = need > 0 ? pv.frame.bbox.width / need : full;
  return span >= full ? [0, full] : [full - span, full];
}

// Says that the lanes drag sideways to the earlier rounds when a finished run is cropped.
function showMore(on) {
  const more = fig.center.find((r) => r.name && r.name.endsWith('-more'));
  if (more && more.visible !== on) more.setv({visible: on}, {sync: false});
}

// Follow the clock while the run is on; show the finished run (restRange) once it ends (once
// per figure width, so a visitor can zoom in afterwards). sync: false keeps these browser-only
// changes local.
function follow(t) {
  const V = view.data;
  if (!V.window.length || V.window[0] <= 0) return;
  const full = V.x_end[0], w = V.window[0];
  const pv = figView();
  const width = pv ? pv.frame.bbox.width : 0;
  let range = null;
  if (t < sdp_total() - EPS && w < full) {
    const s0 = Math.min(Math.max(t - opts.follow_at * w, 0), full - w);
    range = [s0, s0 + w];
    state.whole = false;
    showMore(false);
  } else if (!state.whole || state.restWidth !== width) {
    range = restRange(full);
    state.whole = true;
    state.restWidth = width;
    showMore(range[0] > EPS);
  }
  if (range && (xr.start !== range[0] || xr.end !== range[1]))
    xr.setv({start: range[0], end: range[1]}, {sync: false});
}

// The figure's view once it is laid out (null before).
function figView() {
  if (!(window.Bokeh && Bokeh.index)) return null;
  const pv = Bokeh.index.find_one(fig);
  return pv && pv.frame && pv.frame.bbox.width > 0 ? pv : null;
}

// Screen pixels per ms of the time axis, or null before the figure is laid out.
function pxPerMs() {
  const pv = figView();
  return pv ? pv.frame.bbox.width / Math.max(xr.end - xr.start, 1e-9) : null;
}

// Width in pixels of `text` drawn in the labels' font at `size` ("11px"), measured once.
function textWidth(text, size, weight) {
  const widths = state.widths || (state.widths = new Map());
  const key = weight + size + '|' + text;
  let w = widths.get(key);
  if (w === undefined) {
    const ctx = state.ctx || (state.ctx = document.createElement('canvas').getContext('2d'));
    ctx.font = weight + ' ' + size + ' ' + opts.font;
    w = ctx.measureText(text).width;
    widths.set(key, w);
  }
  return w;
}

// Which side of a mark at pixel x a label of width w goes ('left' or 'right' alignment), so
// that it stays inside a frame `width` wide (the roomier side if neither has room).
function side(x, w, width, gap) {
  if (x + gap + w <= width) return 'left';
  if (x - gap - w >= 0) return 'right';
  return width - x >= x ? 'left' : 'right';
}

function drawBoxes(t) {
  const px_per_ms = opts.min_label_px > 0 ? pxPerMs() : null;
  const frame_px = px_per_ms !== null ? figView().frame.bbox.width : 0;
  const d = bars.data;
  for (let i = 0; i < d.start.length; i++) {
    const s = d.start[i], e = d.end[i];
    const started = (t > s || (e <= s && t >= s)) && t >= d.shown[i];
    d.right[i] = started ? Math.min(Math.max(t, s), e) : s;   // no width, no hover, until shown
    d.alpha[i] = started ? d.opacity[i] : 0;
    const judged = t >= d.judged[i];
    const style = opts.styles[judged ? d.status[i] : d.status_before[i]];
    d.fill[i] = style.fill;
    d.line[i] = style.line;
    d.label[i] = judged ? d.label_a[i] : d.label_b[i];
    d.label_color[i] = judged ? d.label_color_a[i] : d.label_color_b[i];
    d.tip[i] = judged ? d.tip_a[i] : d.tip_b[i];
    let fits = true;                           // hide labels wider than their box
    if (px_per_ms !== null && d.label[i]) {
      const need = Math.max(opts.min_label_px, textWidth(d.label[i], d.label_size[i], 'bold') + LABEL_PAD_PX);
      const at = (d.mid[i] - xr.start) * px_per_ms;     // and labels outside the frame
      fits = (d.label_end[i] - s) * px_per_ms >= need   // the label's room: start..label_end
        && at - need / 2 >= 0 && at + need / 2 <= frame_px;
    }
    d.label_alpha[i] = started && fits && t >= d.label_at[i] ? 1 : 0;
    for (let j = 0; j < opts.hatches.length; j++) {   // one overlay per hatch pattern
      const on = started && style.hatch === opts.hatches[j];
      d['hb' + j][i] = on ? d.bottom[i] : d.y[i];
      d['ht' + j][i] = on ? d.top[i] : d.y[i];
    }
  }
  bars.change.emit();
}

function clockText(ms) {
  return Math.round(ms).toLocaleString('en-US') + ' ms';
}

function drawClocks(t) {
  const c = clocks.data;
  const flip = opts.flip_at * xr.end;
  const pv = figView();
  const width = pv ? pv.frame.bbox.width : 0;
  const px = (x) => (x - xr.start) / Math.max(xr.end - xr.start, 1e-9) * width;
  for (let j = 0; j < c.lane_end.length; j++) {
    const x = Math.min(t, c.lane_end[j]);
    const done = t >= c.lane_end[j];
    c.x[j] = x;
    c.ms[j] = x;
    c.text[j] = clockText(x) + (done ? ' · done' : '');
    c.align[j] = pv ? side(px(x), textWidth(c.text[j], '14px', 'bold'), width, 0)
      : (x > flip ? 'right' : 'left');
    c.color[j] = done ? c.done_color[j] : opts.muted;
  }
  clocks.change.emit();
  const k = cursor.data;
  const label = opts.cursor_label ? 'wall clock ' + clockText(t) : '';
  const align = pv ? side(px(t), textWidth(label, '12px', 'normal'), width, 4) : (t > flip ? 'right' : 'left');
  k.x[0] = t;
  k.label[0] = label;
  k.align[0] = align;
  k.offset[0] = align === 'right' ? -4 : 4;
  k.playing[0] = state.playing ? 1 : 0;
  cursor.change.emit();
}

// The first element matching `sel` in the document or in any open shadow root.
function findDeep(sel) {
  const todo = [document];
  while (todo.length) {
    const root = todo.pop();
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) todo.push(el.shadowRoot);
  }
  return null;
}

// The page's live fields follow the clock (see the header).
function drawLive(t) {
  if (!opts.live) return;
  const L = state.live || (state.live = {root: null});
  if (!L.root || !L.root.isConnected) {
    L.root = findDeep('[data-sdp-live="' + opts.live + '"]');
    const all = (attr) => (L.root ? Array.from(L.root.querySelectorAll('[' + attr + ']')) : []);
    L.clocks = all('data-clock');
    L.after = all('data-after');
    L.before = all('data-before');
  }
  for (const el of L.clocks) {
    const text = clockText(Math.min(t, +el.dataset.clock));
    if (el.textContent !== text) el.textContent = text;
  }
  for (const el of L.after) el.hidden = t < +el.dataset.after - EPS;
  for (const el of L.before) el.hidden = t >= +el.dataset.before - EPS;
}

// Draw the frame again when the figure changes size (a phone turned, a window resized):
// which labels fit depends on it.
function watchSize() {
  if (state.resize || !window.ResizeObserver) return;
  const pv = figView();
  if (!pv || !pv.el) return;
  state.resize = new ResizeObserver(() => {
    if (!state.playing) requestAnimationFrame(() => render(state.t));
  });
  state.resize.observe(pv.el);
}

function render(t) {
  follow(t);
  drawBoxes(t);
  drawClocks(t);
  drawLive(t);
  sdp_frame(t);
}

// Changing a Bokeh button's label re-renders it, which drops keyboard focus: give focus
// back to the new button so Space and Enter keep working.
function setPlayLabel(text) {
  if (play.label === text) return;
  const find = () => (window.Bokeh && Bokeh.index && Bokeh.index.find_one) ? Bokeh.index.find_one(play) : null;
  const before = find();
  const focused = before && before.shadow_el && before.shadow_el.activeElement != null;
  play.label = text;
  if (focused) {   // the new button is rendered after this callback returns
    setTimeout(() => { const after = find(); if (after && after.button_el) after.button_el.focus(); }, 0);
  }
}

function halt() {
  state.playing = false;
  if (state.raf) cancelAnimationFrame(state.raf);
  state.raf = null;
  setPlayLabel(opts.labels.play);
}

// Play from state.t up to `until` (the end, or the next stop), then pause.
function run(until) {
  if (reduce) {                // no motion: show the target frame at once
    state.t = until;
    render(until);
    return;
  }
  state.playing = true;
  state.last = null;
  state.until = until;
  setPlayLabel(opts.labels.pause);
  function frame(now) {
    if (!state.playing) return;
    const dt = state.last === null ? 0 : Math.min(now - state.last, opts.max_step_ms);
    state.last = now;
    state.t = Math.min(state.t + dt * (opts.speeds[speed.value] || 1), state.until);
    render(state.t);
    if (state.t >= state.until) {
      halt();
      render(state.t);
    } else {
      state.raf = requestAnimationFrame(frame);
    }
  }
  state.raf = requestAnimationFrame(frame);
}

function onPlay() {
  const total = sdp_total();
  state.played = true;
  if (state.playing) {            // Pause
    halt();
    render(state.t);
    return;
  }
  if (state.t >= total) state.t = 0;   // finished: play again from the start
  run(total);
}

function onStep() {
  const total = sdp_total();
  state.played = true;
  if (state.playing) halt();
  if (state.t >= total) { state.t = 0; render(0); }
  let next = total;
  for (const s of stops.data.t) if (s > state.t + EPS && s < next) next = s;
  run(next);
}

function onRestart() {
  halt();
  state.t = 0;
  render(0);
}

// The server replaced the timeline: stop, and show the new run's end state (the server
// drew it already; drawing it again resets the frame hook's elements too), or its start
// while the player opens at the start and nothing was played yet. Play then plays it from
// zero.
function onNewTimeline() {
  halt();
  state.whole = false;
  state.t = opts.open_at_start && !state.played ? 0 : sdp_total();
  render(state.t);
}

// A figure that is not laid out yet (a part of the page built after its first paint
// arrives before BokehJS has drawn it): fit the labels once it is, trying on the next
// frames for a while.
function fitWhenLaidOut(tries) {
  if (figView()) {
    watchSize();
    if (!state.playing) render(state.t);
  } else if (tries > 0) {
    requestAnimationFrame(() => fitWhenLaidOut(tries - 1));
  }
}

const trigger = cb_obj.origin || cb_obj;
const laidOut = figView() !== null;
watchSize();
if (trigger === play) onPlay();
else if (step !== null && trigger === step) onStep();
else if (trigger === restart) onRestart();
else onNewTimeline();
if (!laidOut) requestAnimationFrame(() => fitWhenLaidOut(FIT_TRIES));
