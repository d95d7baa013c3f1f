// Tables: the organization's custom tables; a table's rows a page at a time (cursor),
// filtered on its indexed columns (equality, as GET /custom-tables/{name}/rows?where=).
import { el, when } from './ui.js';
import { link, heading, pagedTable, allPages } from './pagekit.js';

export const route = { name: 'tables', title: 'Tables', nav: true, pattern: /^\/tables(?:\/([^/]+))?$/ };

const indexed = (t) => [...new Set((t.indexes || []).filter((i) => i.state === 'ready').flatMap((i) => i.columns || []))];

export async function render(ctx, main, match) {
  if (match[1]) return table(ctx, main, decodeURIComponent(match[1]));
  main.replaceChildren(heading('Tables', 'Custom tables that workflows read and write.'), el('div', { className: 'card' }, [pagedTable('Tables', [
    { title: 'Name', cell: (t) => link('/tables/' + encodeURIComponent(t.name), t.name) },
    { title: 'Columns', cell: (t) => Object.keys(t.fields || {}).join(', ') },
    { title: 'Indexes', cell: (t) => (t.indexes || []).map((i) => (i.columns || []).join(' + ') + (i.state === 'ready' ? '' : ' (' + i.state + ')')).join('; ') || 'none' },
    { title: 'Created', cell: (t) => when(t.created_at) },
  ], (cursor) => ctx.rt('GET', '/custom-tables?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')), { empty: 'No table yet.' })]));
}

async function table(ctx, main, name) {
  const t = (await allPages(ctx, '/custom-tables')).find((x) => x.name === name);
  if (!t) { const e = new Error('table not found: ' + name); e.status = 404; throw e; }
  const cols = Object.keys(t.fields || {});
  const where = {};
  try { Object.assign(where, JSON.parse(ctx.query.get('where') || '{}')); } catch { /* a hand-edited URL: no filter */ }
  const filterable = indexed(t);
  const inputs = filterable.map((c) => el('input', { id: 'f-' + c, name: c, value: where[c] === undefined ? '' : String(where[c]) }));
  const form = el('form', { className: 'filters', 'aria-label': 'Filter rows' }, [
    ...filterable.map((c, i) => el('div', {}, [el('label', { for: 'f-' + c, text: c + ' (' + t.fields[c] + ')' }), inputs[i]])),
    el('button', { className: 'btn', type: 'submit', text: 'Filter' }),
    Object.keys(where).length ? el('button', { className: 'btn secondary', type: 'button', text: 'Clear', onclick: () => ctx.navigate('/tables/' + encodeURIComponent(name)) }) : null]);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const w = {};
    inputs.forEach((inp) => { if (inp.value !== '') w[inp.name] = typed(t.fields[inp.name], inp.value); });
    ctx.navigate('/tables/' + encodeURIComponent(name), Object.keys(w).length ? { where: JSON.stringify(w) } : {});
  });
  const q = Object.keys(where).length ? '&where=' + encodeURIComponent(JSON.stringify(where)) : '';
  const rows = pagedTable('Rows of ' + name, [
    ...cols.map((c) => ({ title: c, num: ['number', 'integer'].includes(t.fields[c]), cell: (r) => show((r.data || {})[c]) })),
    { title: 'Updated', cell: (r) => when(r.updated_at) },
  ], (cursor) => ctx.rt('GET', '/custom-tables/' + encodeURIComponent(name) + '/rows?limit=50' + q + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')),
  { empty: Object.keys(where).length ? 'No row matches.' : 'No row yet.' });
  main.replaceChildren(el('p', {}, [link('/tables', '← Tables')]), heading(name, cols.length + ' columns · ' + ((t.indexes || []).length) + ' indexes'),
    el('div', { className: 'card' }, [filterable.length ? form : el('p', { className: 'sub', text: 'No index: this table filters on nothing. Add one with POST /custom-tables/' + name + '/indexes.' }), rows]));
}

// typed turns what was typed into the column's type, as a where compares JSON values.
function typed(type, v) {
  if (type === 'number' || type === 'integer') { const n = Number(v); return isNaN(n) ? v : n; }
  if (type === 'boolean') return v === 'true' ? true : v === 'false' ? false : v;
  return v;
}

function show(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return el('code', { text: JSON.stringify(v) });
  return String(v);
}
