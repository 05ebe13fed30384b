// AnswerStore (kit/exercises.py): the visitor's answers to the "Check yourself" questions,
// kept in this browser's local storage so that a reload, the other episodes and the summary see
// them. On the first paint it sends what it keeps to the server (model.loaded; the server checks
// every record against its questions); each answer the server records comes back as
// model.saved, one page's records, which are merged into what is kept. A record from the
// server that says "forget" clears the store (the summary's button).

const KEY = 'sdp-answers';
const VERSION = 1;

function read() {
  try {
    return window.localStorage.getItem(KEY) || '';
  } catch {
    return '';  // storage blocked (a private window, a sandboxed frame): nothing is kept
  }
}

function write(text) {
  try {
    if (text === null) window.localStorage.removeItem(KEY);
    else window.localStorage.setItem(KEY, text);
  } catch {
    // storage blocked or full: the answers count for this visit only
  }
}

function parse(text) {
  try {
    const data = JSON.parse(text);
    if (data && data.v === VERSION && data.pages && typeof data.pages === 'object') return data;
  } catch {
    // not records of this format
  }
  return null;
}

function merge(text) {
  const add = parse(text);
  if (!add) return;
  if (add.forget) {
    write(null);
    return;
  }
  const kept = parse(read()) || { v: VERSION, pages: {} };
  for (const [page, records] of Object.entries(add.pages)) {
    kept.pages[page] = Object.assign({}, kept.pages[page], records);
  }
  write(JSON.stringify(kept));
}

export function render({ model }) {
  const text = read();
  if (text && text.length <= model.max_chars) model.loaded = text;
  model.on('saved', () => merge(model.saved));
}
