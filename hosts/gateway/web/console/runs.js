// Runs: every run of the organization, newest first, page after page ("Load more");
// filtered by status, workflow (by name), time range, run id or business key, the filter in
// the URL; the first page read again every few seconds, rows updated in place so the place,
// the focus and the pages loaded stay.
import { el, status, when, duration, between, fail, problem, msg, ENDED } from './ui.js';
import { bulkPanel } from './bulk.js';

export const route = { name: 'runs', title: 'Runs', nav: true, pattern: /^\/runs$/ };

export const STATUSES = ['running', 'paused', 'completed', 'failed', 'cancelled', 'rejected', 'condition_not_met'];
const PAGE = 50;

// filterOf reads the runs filter from a URL query.
export function filterOf(q) {
  return { status: q.get('status') || '', workflow: q.get('workflow') || '', from: q.get('from') || '', to: q.get('to') || '', q: (q.get('q') || '').trim() };
}

// workflowsByName loads the organization's workflows: id -> {name, version}, name -> [ids].
export async function workflowIndex(ctx) {
  const byId = new Map();
  const byName = new Map();
  let cursor = '';
  for (let i = 0; i < 20; i++) {
    const page = await ctx.rt('GET', '/workflows?limit=500' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    for (const w of page.items || []) {
      byId.set(w.id, w);
      if (!byName.has(w.name)) byName.set(w.name, []);
      byName.get(w.name).push(w.id);
    }
    cursor = page.next_cursor || '';
    if (!cursor) break;
  }
  return { byId, byName };
}

// runsQuery is the runtime's query for a filter ('' when the filter cannot match anything).
export function runsQuery(f, wf) {
  const q = new URLSearchParams();
  if (f.status) q.set('status', f.status);
  if (f.workflow) {
    const ids = wf.byName.get(f.workflow) || (wf.byId.has(f.workflow) ? [f.workflow] : null);
    if (!ids) return null;
    q.set('workflow_id', ids[0]);
  }
  if (f.from) q.set('created_after', new Date(f.from).toISOString());
  if (f.to) q.set('created_before', new Date(f.to).toISOString());
  if (f.q) q.set(/^run-/.test(f.q) ? 'run_id' : 'key', f.q);
  return q;
}

function describeFilter(f) {
  const parts = [];
  if (f.status) parts.push('status ' + f.status);
  if (f.workflow) parts.push('workflow ' + f.workflow);
  if (f.from) parts.push('from ' + when(f.from));
  if (f.to) parts.push('until ' + when(f.to));
  if (f.q) parts.push((/^run-/.test(f.q) ? 'run ' : 'key ') + f.q);
  return parts.length ? parts.join(', ') : 'all runs';
}

export async function render(ctx, main) {
  const f = filterOf(ctx.query);
  const wf = await workflowIndex(ctx);
  if (!ctx.shown()) return;

  // The filter: a form; a change applies it (the URL follows, focus stays where it is).
  const statusSel = el('select', { id: 'f-status', name: 'status' }, [el('option', { value: '', text: 'Any status' }),
    STATUSES.map((s) => el('option', { value: s, text: s.replace(/_/g, ' '), selected: s === f.status }))]);
  const names = [...wf.byName.keys()].sort((a, b) => a.localeCompare(b));
  const wfSel = el('select', { id: 'f-workflow', name: 'workflow' }, [el('option', { value: '', text: 'Any workflow' }),
    names.map((n) => el('option', { value: n, text: n, selected: n === f.workflow }))]);
  const from = el('input', { id: 'f-from', name: 'from', type: 'datetime-local', value: f.from });
  const to = el('input', { id: 'f-to', name: 'to', type: 'datetime-local', value: f.to });
  const search = el('input', { id: 'f-q', name: 'q', type: 'search', value: f.q, placeholder: 'run-… or INV-1042', size: 26 });
  const form = el('form', { className: 'filters card', role: 'search', 'aria-label': 'Filter runs' }, [
    el('div', {}, [el('label', { for: 'f-status', text: 'Status' }), statusSel]),
    el('div', {}, [el('label', { for: 'f-workflow', text: 'Workflow' }), wfSel]),
    el('div', {}, [el('label', { for: 'f-from', text: 'Started after' }), from]),
    el('div', {}, [el('label', { for: 'f-to', text: 'Started before' }), to]),
    el('div', {}, [el('label', { for: 'f-q', text: 'Run id or business key' }), search]),
    el('div', { className: 'row' }, [el('button', { type: 'submit', className: 'btn', text: 'Search' }),
      el('button', { type: 'button', className: 'btn secondary', text: 'Clear', onclick: () => ctx.navigate('/runs') })]),
  ]);
  function apply() {
    ctx.navigate('/runs', { status: statusSel.value, workflow: wfSel.value, from: from.value, to: to.value, q: search.value.trim() });
  }
  form.addEventListener('submit', (ev) => { ev.preventDefault(); apply(); });
  for (const c of [statusSel, wfSel, from, to]) c.addEventListener('change', apply);

  const summary = el('p', { id: 'runs-summary', className: 'muted', 'aria-live': 'polite' });
  const tbody = el('tbody');
  const table = el('table', { id: 'runs' }, [
    el('caption', { className: 'visually-hidden', text: 'Runs, newest first' }),
    el('thead', {}, [el('tr', {}, ['Run', 'Workflow', 'Status', 'Started', 'Ended', 'Duration'].map((h) => el('th', { scope: 'col', text: h, className: h === 'Duration' ? 'num' : undefined })))]),
    tbody]);
  const more = el('button', { type: 'button', className: 'btn secondary', id: 'more', text: 'Load more', hidden: true });
  const box = el('div', { className: 'card' }, [summary, table, el('div', { className: 'row' }, [more])]);
  const query = runsQuery(f, wf);
  // matches checks a run against the filter here too: a service that does not know a
  // parameter (an older one: the time range) ignores it, and the list must not say more.
  const after = f.from ? new Date(f.from).getTime() : null;
  const before = f.to ? new Date(f.to).getTime() : null;
  const wfIds = f.workflow ? new Set(wf.byName.get(f.workflow) || [f.workflow]) : null;
  function matches(r) {
    const t = new Date(r.created_at).getTime();
    return (!f.status || r.status === f.status) && (!wfIds || wfIds.has(r.workflow_id)) &&
      (after === null || t > after) && (before === null || t < before);
  }
  const bulk = bulkPanel(ctx, query, describeFilter(f), () => ctx.refresh(), (id) => (wf.byId.get(id) || {}).name || id);
  main.replaceChildren(el('h2', { text: 'Runs' }), form, bulk, box);

  if (query === null) {
    summary.textContent = 'No workflow is named ' + f.workflow + '.';
    table.hidden = true;
    return;
  }
  // An empty range is said here, by the fields' names (the service would refuse it).
  if (after !== null && before !== null && after >= before) {
    to.setAttribute('aria-invalid', 'true');
    to.setAttribute('aria-describedby', 'runs-summary');
    summary.textContent = '\u201cStarted before\u201d must be later than \u201cStarted after\u201d.';
    summary.className = 'msg bad';
    table.hidden = true;
    return;
  }

  const rows = new Map(); // run id -> {tr, run}
  let cursor = '';
  let newest = '';

  function wfLabel(r) {
    const w = wf.byId.get(r.workflow_id);
    const name = r.workflow_name || (w && w.name) || r.workflow_id;
    return [el('span', { text: name }), ' ', el('span', { className: 'muted', text: 'v' + r.workflow_version })];
  }
  function cells(r) {
    const ended = ENDED.includes(r.status);
    const end = ended ? (r.finished_at || r.updated_at) : '';
    const ms = r.duration_ms !== undefined && r.duration_ms !== null ? r.duration_ms : between(r.created_at, end || null);
    return [
      el('td', {}, [el('a', { href: '/console/runs/' + encodeURIComponent(r.id), text: r.id.replace(/^run-/, '').slice(0, 8), 'aria-label': 'Run ' + r.id, title: r.id }), el('code', { className: 'visually-hidden', text: r.id })]),
      el('td', {}, wfLabel(r)),
      el('td', {}, [status(r.status, r.status.replace(/_/g, ' '))]),
      el('td', {}, [el('time', { datetime: r.created_at, text: when(r.created_at) })]),
      el('td', {}, end ? [el('time', { datetime: end, text: when(end) })] : [el('span', { className: 'muted', text: '—' })]),
      el('td', { className: 'num', text: duration(ms) + (ended ? '' : ' so far') }),
    ];
  }
  function rowOf(r) {
    const tr = el('tr', { 'data-run': r.id }, cells(r));
    rows.set(r.id, { tr, run: r });
    return tr;
  }
  // update rewrites a row's cells when the run changed, but the link's cell (which may hold
  // the focus) stays.
  function update(r) {
    const have = rows.get(r.id);
    if (!have) return;
    const changed = have.run.status !== r.status || !ENDED.includes(r.status);
    have.run = r;
    if (!changed) return;
    const fresh = cells(r);
    for (let i = 1; i < fresh.length; i++) have.tr.children[i].replaceWith(fresh[i]);
  }
  function counted() {
    summary.textContent = rows.size ? rows.size + (cursor ? '+' : '') + ' runs shown (' + describeFilter(f) + ')' + (cursor ? '; more below.' : '.') : 'No run matches (' + describeFilter(f) + ').';
    table.hidden = rows.size === 0;
    more.hidden = !cursor;
  }

  async function page(c) {
    const q = new URLSearchParams(query);
    q.set('limit', String(PAGE));
    if (c) q.set('cursor', c);
    const p = await ctx.rt('GET', '/runs?' + q);
    return { items: (p.items || []).filter(matches), next_cursor: p.next_cursor };
  }

  // A run id searched for: the run itself, when the list cannot filter by id.
  async function first() {
    let p = await page('');
    if (f.q && /^run-/.test(f.q) && !(p.items || []).every((r) => r.id === f.q)) {
      try {
        const st = await ctx.rt('GET', '/runs/' + encodeURIComponent(f.q) + '/status');
        p = { items: [{ id: st.id, workflow_id: st.workflow_id, workflow_version: st.workflow_version, status: st.status, created_at: st.created_at, updated_at: st.updated_at, finished_at: st.finished_at }], next_cursor: '' };
      } catch (e) {
        if (e.status !== 404) throw e;
        p = { items: [], next_cursor: '' };
      }
    }
    return p;
  }

  try {
    const p = await first();
    if (!ctx.shown()) return;
    for (const r of p.items || []) tbody.appendChild(rowOf(r));
    cursor = p.next_cursor || '';
    newest = p.items && p.items.length ? p.items[0].created_at : '';
    counted();
  } catch (e) {
    fail(box, e);
    return;
  }

  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const p = await page(cursor);
      if (!ctx.shown()) return;
      let firstNew = null;
      for (const r of p.items || []) {
        if (rows.has(r.id)) { update(r); continue; }
        const tr = rowOf(r);
        tbody.appendChild(tr);
        if (!firstNew) firstNew = tr;
      }
      cursor = p.next_cursor || '';
      counted();
      // Focus the first row loaded, so that a keyboard reader goes on from there.
      if (firstNew) firstNew.querySelector('a').focus();
    } catch (e) {
      box.appendChild(msg('bad', problem(e)));
    } finally {
      more.disabled = false;
    }
  });

  // Live: the first page again; known rows updated in place, new ones put on top.
  ctx.every(3000, async () => {
    const p = await first();
    if (!ctx.shown()) return;
    const fresh = [];
    for (const r of p.items || []) {
      if (rows.has(r.id)) update(r);
      else if (!newest || r.created_at >= newest) fresh.push(r);
    }
    for (const r of fresh.reverse()) tbody.insertBefore(rowOf(r), tbody.firstChild);
    if (fresh.length) {
      newest = fresh[0].created_at > newest ? fresh[0].created_at : newest;
      for (const r of fresh) if (r.created_at > newest) newest = r.created_at;
    }
    // A run shown that has not ended and left the first page (it changed status and the
    // filter no longer takes it, or it is further down): read on its own, 20 a tick at most.
    const onPage = new Set((p.items || []).map((x) => x.id));
    const stale = [...rows.values()].filter(({ run }) => !ENDED.includes(run.status) && !onPage.has(run.id)).slice(0, 20);
    await Promise.all(stale.map(async ({ run }) => {
      try {
        const st = await ctx.rt('GET', '/runs/' + encodeURIComponent(run.id) + '/status');
        update(Object.assign({}, run, { status: st.status, updated_at: st.updated_at, finished_at: st.finished_at }));
      } catch (e) { /* gone: left as it was */ }
    }));
    if (fresh.length) counted();
  });
}
