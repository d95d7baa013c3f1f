// Pieces the workflows, tables, documents, webhooks, agents and forms pages share: a page
// heading, an error box, a table paged by cursor, pretty JSON and a line diff.
import { el } from './ui.js';

// The look of these pages, added to the page once (console.html holds the shared look).
const css = `
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.pagehead{margin-bottom:.75rem}.pagehead h2{margin:.25rem 0}.sub{color:var(--muted,#5b616b);font-size:.9em;margin:.1rem 0}
.pager{margin-top:.5rem}.pager .sub{margin-left:.5rem}
.btn:disabled{opacity:.45;cursor:default}.btn.small{font-size:.85em;padding:.25rem .55rem}
.flow,.flow ol{list-style:none;padding:0;margin:.25rem 0;counter-reset:step -1}
.flow-step{counter-increment:step;position:relative;border:1px solid #8a8f98;border-left-width:5px;border-radius:8px;padding:.5rem .75rem;margin:0 0 1.1rem}
.flow-step::before{content:"#" counter(step);position:absolute;left:-2.3rem;top:.45rem;width:1.9rem;text-align:right;font-weight:600;color:var(--muted,#5b616b)}
.flow{margin-left:2.1rem}.flow .flow{margin-left:2.1rem;margin-top:.5rem}
.flow>.flow-step:not(:last-child)::after{content:"↓";position:absolute;left:1rem;bottom:-1.15rem;color:#8a8f98;font-size:.9rem;line-height:1}
.flow-action{border-left-color:#2457c5}.flow-pause{border-left-color:#b26a00}.flow-loop{border-left-color:#6b3fa0}
.flow-table{border-left-color:#2e7d32}.flow-match{border-left-color:#00838f}.flow-agent{border-left-color:#ad1457}
.kind{display:inline-block;font-size:.75em;text-transform:uppercase;letter-spacing:.04em;padding:0 .4rem;border-radius:4px;background:#8a8f9833}
.filter,.branch{margin-top:.35rem;font-size:.9em}
.diff{max-height:32rem}.diff span{display:block}
.d-add{background:#2e7d3226}.d-del{background:#c6282826}.d-fold{color:var(--muted,#5b616b);font-style:italic}
.filters{margin-bottom:.75rem}.filters input{min-width:10rem}
.attempts{padding:.25rem 0 .5rem 1.5rem}.detail>td{border-bottom-width:2px}
.attempts table{font-size:.9em;width:auto}.attempts th,.attempts td{padding:.2rem .75rem .2rem 0}
.trace{list-style:none;padding:0}.trace dl,.facts{display:grid;grid-template-columns:8rem 1fr;gap:.25rem .75rem;margin:0}
.trace dt,.facts dt{font-weight:600}.trace dd,.facts dd{margin:0}
.answer{white-space:pre-wrap}
`;
if (typeof document !== 'undefined' && !document.getElementById('pagekit-css')) document.head.append(el('style', { id: 'pagekit-css', text: css }));

// link is a link to a console path (app.js turns its click into a navigation).
export function link(path, text, attrs) { return el('a', Object.assign({ href: '/console' + path, text }, attrs || {})); }

export function heading(title, sub) {
  return el('div', { className: 'pagehead' }, [el('h2', { text: title }), sub ? el('p', { className: 'sub', text: sub }) : null]);
}

export function problem(e) {
  const code = e && (e.code || (e.problem && e.problem.code));
  return el('div', { className: 'msg bad', role: 'alert', text: String((e && e.message) || e) + (code ? ' (' + code + ')' : '') });
}

// pretty is JSON with its object keys sorted, two spaces a level: two versions of a
// definition diff by what changed, not by the order their keys were written in.
export function pretty(v) {
  const sort = (x) => Array.isArray(x) ? x.map(sort)
    : x && typeof x === 'object' ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sort(x[k])])) : x;
  return JSON.stringify(sort(v), null, 2);
}

// lineDiff compares two texts line by line (longest common subsequence): a list of
// {op: ' ' | '-' | '+', text}. Texts above maxCells lines² are compared as a whole: all of
// a removed, all of b added.
export function lineDiff(a, b, maxCells = 4e6) {
  const x = a.split('\n'), y = b.split('\n');
  let lo = 0;
  while (lo < x.length && lo < y.length && x[lo] === y[lo]) lo++;
  let hx = x.length, hy = y.length;
  while (hx > lo && hy > lo && x[hx - 1] === y[hy - 1]) { hx--; hy--; }
  const out = x.slice(0, lo).map((t) => ({ op: ' ', text: t }));
  const xs = x.slice(lo, hx), ys = y.slice(lo, hy), n = xs.length, m = ys.length;
  if (n * m > maxCells) {
    xs.forEach((t) => out.push({ op: '-', text: t }));
    ys.forEach((t) => out.push({ op: '+', text: t }));
  } else {
    const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = xs[i] === ys[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xs[i] === ys[j]) { out.push({ op: ' ', text: xs[i] }); i++; j++; }
      else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) { out.push({ op: '-', text: xs[i] }); i++; } // a removal before its replacement
      else { out.push({ op: '+', text: ys[j] }); j++; }
    }
  }
  x.slice(hx).forEach((t) => out.push({ op: ' ', text: t }));
  return out;
}

// dataTable is a <table> with a caption, one header row and a row per item; a column is
// {title, cell(item) -> node | string, num?: right-aligned figures}.
export function dataTable(caption, columns, items, rowAttrs) {
  const cell = (c, v) => el('td', { className: c.num ? 'num' : null }, [v === null || v === undefined ? '' : typeof v === 'object' ? v : String(v)]);
  return el('table', {}, [
    el('caption', { className: 'vh', text: caption }),
    el('thead', {}, [el('tr', {}, columns.map((c) => el('th', { scope: 'col', className: c.num ? 'num' : null, text: c.title })))]),
    el('tbody', {}, items.map((it) => el('tr', rowAttrs ? rowAttrs(it) : {}, columns.map((c) => cell(c, c.cell(it))))))]);
}

// pagedTable shows a list route a page at a time: fetchPage(cursor) answers {items,
// next_cursor}; Previous and Next walk the cursors, and the range shown is announced.
export function pagedTable(caption, columns, fetchPage, opts = {}) {
  const box = el('div', { className: 'paged' });
  const live = el('p', { className: 'sub', 'aria-live': 'polite' });
  const prev = el('button', { type: 'button', className: 'btn secondary', text: 'Previous page' });
  const next = el('button', { type: 'button', className: 'btn secondary', text: 'Next page' });
  const body = el('div', {});
  box.append(body, el('div', { className: 'row pager' }, [prev, next, live]));
  const stack = [];
  let cursor = opts.cursor || '', first = 0;
  async function show() {
    prev.disabled = next.disabled = true;
    try {
      const page = await fetchPage(cursor);
      const items = page.items || [];
      body.replaceChildren(items.length ? dataTable(caption, columns, items, opts.rowAttrs) : el('p', { text: opts.empty || 'Nothing here yet.' }));
      live.textContent = items.length ? `${caption}: ${first + 1}–${first + items.length}` + (page.next_cursor ? ', more after' : '') : '';
      prev.disabled = !stack.length;
      next.disabled = !page.next_cursor;
      next.onclick = () => { stack.push([cursor, first]); cursor = page.next_cursor; first += items.length; show(); };
      prev.onclick = () => { [cursor, first] = stack.pop(); show(); };
      if (opts.onPage) opts.onPage(page, cursor);
    } catch (e) {
      body.replaceChildren(problem(e));
    }
  }
  box.reload = show;
  show();
  return box;
}

export function jsonBlock(v, label) {
  return el('pre', { tabindex: '0', role: 'region', 'aria-label': label || 'JSON', text: typeof v === 'string' ? v : pretty(v) });
}

// short shortens a long id for a table cell; the whole id stays in its title.
export function short(id) { return el('code', { title: id, text: id && id.length > 18 ? id.slice(0, 14) + '…' : id }); }

// allPages reads every page of a list route (at most max items).
export async function allPages(ctx, path, max = 1000) {
  const out = [];
  let cursor = '';
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await ctx.rt('GET', path + sep + 'limit=200' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    out.push(...(page.items || []));
    cursor = page.next_cursor || '';
  } while (cursor && out.length < max);
  return out;
}
