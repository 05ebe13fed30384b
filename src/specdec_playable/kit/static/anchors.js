// FragmentTarget (kit/anchors.py): follows the address's #fragment into Panel's shadow roots.
// The browser looks for the id only in the page's own document; Panel draws every part of the
// page inside shadow roots, and parts built later are not there at load. This looks in every
// open shadow root until the element exists, scrolling to a part still loading (which builds
// it) while it is missing, then scrolls the element to the top of the window, twice, since
// parts above it may still change height.

const POLL_MS = 200;
const SETTLE_MS = 900;

function findDeep(test) {
  const todo = [document];
  while (todo.length) {
    const root = todo.pop();
    for (const el of root.querySelectorAll('*')) {
      if (test(el)) return el;
      if (el.shadowRoot) todo.push(el.shadowRoot);
    }
  }
  return null;
}

function seek(id, until) {
  const target = findDeep((el) => el.id === id);
  if (target) {
    target.scrollIntoView({block: 'start'});
    setTimeout(() => target.isConnected && target.scrollIntoView({block: 'start'}), SETTLE_MS);
    return;
  }
  if (Date.now() > until) return;
  const loading = findDeep((el) => el.classList && el.classList.contains('sdp-near-mark'));
  if (loading) loading.scrollIntoView({block: 'center'});
  setTimeout(() => seek(id, until), POLL_MS);
}

function fromAddress(model) {
  const raw = window.location.hash.slice(1);
  if (!raw) return;
  let id = raw;
  try {
    id = decodeURIComponent(raw);
  } catch {
    return;   // not a fragment this page wrote
  }
  seek(id, Date.now() + model.seek_ms);
}

export function render({ model }) {
  fromAddress(model);
  const onHash = () => fromAddress(model);
  window.addEventListener('hashchange', onHash);
  model.on('remove', () => window.removeEventListener('hashchange', onHash));
}
