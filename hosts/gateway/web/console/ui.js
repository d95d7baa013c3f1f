// Shared helpers of the console's pages: plain DOM, no build step.

// el builds an element: attrs (text, className, on<event> handlers, others as attributes;
// undefined, null and false are left out) and children (strings, nodes, nested arrays,
// falsy ones skipped).
export function el(tag, attrs, children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'className') e.className = v;
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of [].concat(children || [])) {
    if (c === null || c === undefined || c === false || c === '') continue;
    if (Array.isArray(c)) append(e, c);
    else e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

// status is a status badge; label, when given, is what it reads (the class stays the status).
export function status(s, label) {
  return el('span', { className: 'status ' + String(s || '').replace(/[^a-z_]/g, ''), text: label || s || '' });
}

// when is a moment as the reader's locale writes it.
export function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

// duration writes milliseconds as a person reads them: 840 ms, 3.2 s, 4 min 05 s, 2 h 10 min.
export function duration(ms) {
  if (ms === null || ms === undefined || isNaN(ms)) return '';
  ms = Math.max(0, Math.round(ms));
  if (ms < 1000) return ms + ' ms';
  const s = ms / 1000;
  if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + String(Math.round(s % 60)).padStart(2, '0') + ' s';
  const h = Math.floor(m / 60);
  if (h < 48) return h + ' h ' + String(m % 60).padStart(2, '0') + ' min';
  return Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
}

// between is the duration from a to b (b missing: until now).
export function between(a, b) {
  if (!a) return null;
  return (b ? new Date(b) : new Date()) - new Date(a);
}

// problem is an error's message for a person: the problem's detail and its code.
export function problem(e) {
  if (!e) return '';
  // A problem's errors say which field and why ("validation failed: created_before: must be
  // later than created_after"), not the bare title.
  const errs = (e.body && Array.isArray(e.body.errors) ? e.body.errors : []).filter((x) => x && x.message)
    .map((x) => (x.location ? String(x.location).replace(/^(body|query|path)?[./]?/, '') + ': ' : '') + x.message);
  return (e.message || String(e)) + (errs.length ? ': ' + errs.join('; ') : '') + (e.code ? ' (' + e.code + ')' : '');
}

// fail replaces a box's content by the error, announced.
export function fail(where, e) {
  where.replaceChildren(el('div', { className: 'msg bad', role: 'alert', text: problem(e) }));
}

// json is a value as indented JSON in a <pre>.
export function json(v, attrs) {
  // tabindex: a long value scrolls inside the <pre>, and the keyboard must reach it to scroll.
  return el('pre', Object.assign({ className: 'json', tabindex: '0' }, attrs || {}), [JSON.stringify(v, null, 2)]);
}

// msg is a message line, its role status (polite) or alert when bad.
export function msg(kind, text) {
  return el('div', { className: 'msg ' + (kind || ''), role: kind === 'bad' ? 'alert' : 'status', text: text || '' });
}

// ENDED are the statuses a run does not leave.
export const ENDED = ['completed', 'failed', 'cancelled', 'rejected', 'condition_not_met'];

// FOCUSABLE are the controls Tab reaches.
const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]):not([type=hidden]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

// openDialog shows a modal <dialog> labelled by its title, inside `where`: focus moves to
// `first` (or its first control; 'title': its heading), Tab and Shift+Tab stay inside it (the page behind is
// inert), Escape closes it. Closed, it goes away and focus returns to returnTo() (the
// button that opened it, found again if the page redrew it meanwhile) unless close(target)
// names another element. It returns { dialog, close }.
export function openDialog(where, { id, title, body, first, returnTo, describedBy }) {
  const heading = el('h3', { id: id + '-title', text: title });
  const dialog = el('dialog', { id, className: 'dialog', 'aria-labelledby': id + '-title', 'aria-describedby': describedBy }, [heading, body]);
  let target = null;
  const controls = () => [...dialog.querySelectorAll(FOCUSABLE)].filter((c) => !c.hidden && c.offsetParent !== null);
  dialog.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Tab') return;
    const all = controls();
    if (!all.length) return;
    const at = all.indexOf(document.activeElement);
    if (ev.shiftKey && at <= 0) { ev.preventDefault(); all[all.length - 1].focus(); }
    else if (!ev.shiftKey && at === all.length - 1) { ev.preventDefault(); all[0].focus(); }
  });
  dialog.addEventListener('close', () => {
    dialog.remove();
    const to = target || (returnTo && returnTo());
    if (to && to.isConnected) {
      if (!to.matches(FOCUSABLE) && !to.hasAttribute('tabindex')) to.setAttribute('tabindex', '-1');
      to.focus();
    }
  });
  where.appendChild(dialog);
  dialog.showModal();
  // 'title': a long dialog is read from its heading (Tab goes on to its first control).
  if (first === 'title') heading.setAttribute('tabindex', '-1');
  (first === 'title' ? heading : first || controls()[0] || heading).focus();
  return { dialog, close(to) { target = to || null; if (dialog.open) dialog.close(); } };
}
