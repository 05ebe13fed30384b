// Scrolls to the question a link names (#exercise-2) once it is on the page, and again when
// the link's fragment changes. The questions live inside Panel's shadow roots, where the
// browser's own fragment navigation cannot find them. Touches no model property.
/* exported sdp_exercise_link */

function sdp_exercise_link() {
  const TRIES = 50;       // look for the question for about 10 s (parts above it still arriving)
  const EVERY_MS = 200;
  function deep(id) {
    const todo = [document];
    while (todo.length) {
      const root = todo.pop();
      const hit = root.getElementById ? root.getElementById(id) : root.querySelector('#' + id);
      if (hit) return hit;
      for (const el of root.querySelectorAll('*')) if (el.shadowRoot) todo.push(el.shadowRoot);
    }
    return null;
  }
  function go() {
    const m = /^#(exercise-\d+|exercises)$/.exec(window.location.hash);
    if (!m) return;
    let tries = 0, seen = 0;
    let moved = false;
    const stop = () => { moved = true; };
    window.addEventListener('wheel', stop, {once: true, passive: true});
    window.addEventListener('touchstart', stop, {once: true, passive: true});
    window.addEventListener('keydown', stop, {once: true});
    const timer = setInterval(() => {
      const el = deep(m[1]);
      if (el && !moved) {
        el.scrollIntoView({block: 'start'});
        seen += 1;
      }
      // Keep it in view while the parts above it are built (their height changes), then stop.
      if (moved || seen >= 10 || ++tries >= TRIES) clearInterval(timer);
    }, EVERY_MS);
  }
  if (!window.__sdp_exercise_link) {
    window.__sdp_exercise_link = true;
    window.addEventListener('hashchange', go);
  }
  go();
}
sdp_exercise_link();
