// Episode 2's frame hook for the lane player (appended to lanes.js; see its header):
// keeps the text, the clocks and the guarantee under the lanes in step with the clock.
//
// The contract with the HTML that episodes/ep2/view.py builds, for a page whose view has
// the id `uid` (a CustomJS argument, with `rounds`):
//   [data-sdp="<uid>-text"]    the growing text. Each token span inside has data-on (ms it
//                              appears); optionally data-off (ms it disappears) and
//                              data-chk (ms from which it has the class `chk`: the big model
//                              is checking it). The server sends the end state (`hidden` set).
//   [data-sdp="<uid>-clocks"]  the clocks. An element with data-k="<column>" shows that
//                              column of `rounds` at the last round ended by now;
//                              data-k="badbox" shows only once a bad round happened,
//                              data-k="nobad" only until then.
//   [data-sdp="<uid>-check"]   the guarantee: data-k="pending" until the run ends,
//                              data-k="result" from then on.
//   [data-sdp="<uid>-rounds"]  the list of rounds (optional): each element with data-on
//                              shows from that ms on.
// `rounds` is a ColumnDataSource with one row per round end (row 0: the start): end_ms,
// bad_rounds, and the display strings data-k names (episodes/ep2/view.py round_rows).
// Elements are looked up once and again only after the server replaced them; the hook
// touches only the DOM, never a model property.

/* global state, sdp_total, findDeep, rounds, uid */
/* exported sdp_frame */

function sdp_frame(t) {
  const E = state.ep2 || (state.ep2 = {});
  if (!E.text || !E.text.isConnected) {
    E.text = findDeep('[data-sdp="' + uid + '-text"]');
    E.spans = E.text ? Array.from(E.text.querySelectorAll('[data-on]'), el => ({
      el, on: +el.dataset.on,
      off: el.dataset.off ? +el.dataset.off : Infinity,
      chk: el.dataset.chk ? +el.dataset.chk : Infinity})) : [];
  }
  for (const s of E.spans) {
    const vis = t >= s.on && t < s.off;
    if (s.el.hidden === vis) s.el.hidden = !vis;
    const chk = t >= s.chk;
    if (s.el.classList.contains('chk') !== chk) s.el.classList.toggle('chk', chk);
  }
  if (!E.rounds || !E.rounds.isConnected) {
    E.rounds = findDeep('[data-sdp="' + uid + '-rounds"]');
    E.items = E.rounds ? Array.from(E.rounds.querySelectorAll('[data-on]'), el => ({el, on: +el.dataset.on})) : [];
  }
  for (const s of E.items) {
    const vis = t >= s.on;
    if (s.el.hidden === vis) s.el.hidden = !vis;
  }
  if (!E.clocks || !E.clocks.isConnected) {
    E.clocks = findDeep('[data-sdp="' + uid + '-clocks"]');
    E.cf = fields(E.clocks);
  }
  if (!E.check || !E.check.isConnected) {
    E.check = findDeep('[data-sdp="' + uid + '-check"]');
    E.gf = fields(E.check);
  }
  const R = rounds.data;
  let row = 0;
  for (let j = 0; j < R.end_ms.length; j++) if (R.end_ms[j] <= t + 1e-6) row = j;
  for (const key in E.cf) {
    if (!(key in R)) continue;
    const v = R[key][row];
    if (E.cf[key].textContent !== v) E.cf[key].textContent = v;
  }
  if (E.cf.badbox) E.cf.badbox.hidden = R.bad_rounds[row] === 0;
  if (E.cf.nobad) E.cf.nobad.hidden = R.bad_rounds[row] !== 0;
  const done = t >= sdp_total() - 1e-6;
  if (E.gf.pending) E.gf.pending.hidden = done;
  if (E.gf.result) E.gf.result.hidden = !done;
}

// The elements inside `el` that carry data-k, by their key.
function fields(el) {
  const out = {};
  if (el) for (const f of el.querySelectorAll('[data-k]')) out[f.dataset.k] = f;
  return out;
}
