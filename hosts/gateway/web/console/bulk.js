// Many runs at once: cancel (or retry) every run that matches the runs page's filter, after
// saying how many it touches; its progress visible, its outcome kept (this browser's
// storage, per organization) and listed under the filter.
import { el, when, problem, msg, ENDED } from './ui.js';

const KEPT = 'svc-console-operations:';
const MAX = 5000;

function kept(org) {
  try { return JSON.parse(localStorage.getItem(KEPT + org) || '[]'); } catch (e) { return []; }
}
function keep(org, op) {
  const all = [op].concat(kept(org).filter((o) => o.id !== op.id)).slice(0, 20);
  try { localStorage.setItem(KEPT + org, JSON.stringify(all)); } catch (e) { /* private mode */ }
}

const ACTIONS = {
  cancel: { verb: 'Cancel', done: 'cancelled', eligible: (r) => !ENDED.includes(r.status), path: (id) => '/runs/' + encodeURIComponent(id) + '/cancel' },
  retry: { verb: 'Retry', done: 'retried', eligible: (r) => r.status === 'failed', path: (id) => '/runs/' + encodeURIComponent(id) + '/retry' },
};

// matching lists the runs of a query the action applies to (at most MAX).
async function matching(ctx, query, matches, action) {
  const out = [];
  let cursor = '';
  let seen = 0;
  do {
    const q = new URLSearchParams(query);
    q.set('limit', '500');
    if (cursor) q.set('cursor', cursor);
    const p = await ctx.rt('GET', '/runs?' + q);
    for (const r of p.items || []) { seen++; if (matches(r) && ACTIONS[action].eligible(r)) out.push(r.id); }
    cursor = p.next_cursor || '';
  } while (cursor && out.length < MAX && ctx.shown());
  return { ids: out.slice(0, MAX), seen, capped: out.length > MAX || !!cursor };
}

function outcome(op) {
  const left = op.total - op.ok - op.refused.length;
  return [
    el('strong', { text: ACTIONS[op.action].verb + ' ' + op.filter }), ' — ',
    op.ok + ' of ' + op.total + ' ' + ACTIONS[op.action].done,
    op.refused.length ? ', ' + op.refused.length + ' refused' : '',
    left > 0 && op.state === 'running' ? ', ' + left + ' to go' : '',
    op.state === 'stopped' ? ' (stopped, ' + left + ' not touched)' : '',
    el('span', { className: 'muted', text: ' · ' + when(op.at) + (op.reason ? ' · “' + op.reason + '”' : '') }),
  ];
}

// serverFilter is the filter as POST /run-operations takes it (workflow and status), or null
// when the page's filter says more (a time range, a search) than it can carry.
function serverFilter(query) {
  const q = new URLSearchParams(query);
  const f = {};
  for (const [k, v] of q) {
    if (k === 'workflow_id' || k === 'status') f[k] = v;
    else return null;
  }
  return f;
}

function serverOutcome(op, nameOf) {
  return [el('strong', { text: (op.action === 'retry' ? 'Retry' : 'Cancel') + ' ' + [op.filter.workflow_id && 'workflow ' + (nameOf ? nameOf(op.filter.workflow_id) : op.filter.workflow_id), op.filter.status && 'status ' + op.filter.status].filter(Boolean).join(', ') }), ' — ',
    op.status === 'pending' ? 'counting the runs' : op.done + ' of ' + op.matched + ' ' + (op.action === 'retry' ? 'retried' : 'cancelled'),
    op.skipped ? ', ' + op.skipped + ' skipped' : '', op.failed ? ', ' + op.failed + ' refused' : '', op.status === 'running' ? ' (running)' : '',
    el('span', { className: 'muted', text: ' · ' + when(op.created_at) + (op.actor && op.actor.id ? ' · ' + op.actor.id : '') + (op.reason ? ' · “' + op.reason + '”' : '') })];
}

export function bulkPanel(ctx, query, matches, filterText, done, nameOf) {
  const area = el('div', { className: 'bulk-area' });
  const history = el('ul', { className: 'ops', 'aria-label': 'Operations on many runs' });
  const serverOps = el('ul', { className: 'ops', 'aria-label': 'Run operations of the organization' });
  const panel = el('details', { className: 'card bulk', id: 'bulk' }, [
    el('summary', { text: 'Act on every run that matches' }),
    el('p', { className: 'muted', text: 'The filter: ' + filterText + '.' }),
    el('div', { className: 'row' }, [
      el('button', { type: 'button', className: 'btn secondary', text: 'Cancel matching runs…', onclick: () => plan('cancel') }),
      el('button', { type: 'button', className: 'btn secondary', text: 'Retry matching failed runs…', onclick: () => plan('retry') })]),
    area, serverOps, history]);

  let server = null; // does the service run operations itself (POST /run-operations)?
  async function drawServerOps() {
    try {
      const list = await ctx.rt('GET', '/run-operations?limit=10');
      server = true;
      serverOps.replaceChildren(...(list.items || []).map((op) => {
        const li = el('li', { 'data-op': op.id }, serverOutcome(op, nameOf));
        if ((op.errors || []).length) li.appendChild(el('details', {}, [el('summary', { text: 'Refused runs' }), el('ul', {}, op.errors.slice(0, 50).map((x) =>
          el('li', {}, [el('a', { href: '/console/runs/' + encodeURIComponent(x.run_id), text: x.run_id }), ': ' + x.message])))]));
        return li;
      }));
      if ((list.items || []).some((o) => o.status !== 'completed' || Date.now() - new Date(o.finished_at || 0).getTime() < 15000)) panel.open = true;
    } catch (e) { server = false; }
  }
  drawServerOps();

  function drawHistory() {
    const ops = kept(ctx.org);
    history.replaceChildren(...ops.map((op) => {
      const li = el('li', { 'data-op': op.id }, outcome(op));
      if (op.refused.length) {
        li.appendChild(el('details', {}, [el('summary', { text: 'Refused runs' }), el('ul', {}, op.refused.slice(0, 50).map((x) =>
          el('li', {}, [el('a', { href: '/console/runs/' + encodeURIComponent(x.id), text: x.id }), ': ' + x.why])))]));
      }
      return li;
    }));
    // Open while one runs, or just after one ended (the page is drawn again then).
    if (ops.length && !panel.open) panel.open = ops.some((o) => o.state === 'running' || Date.now() - new Date(o.ended || 0).getTime() < 15000);
  }
  drawHistory();

  async function plan(action) {
    if (query === null) { area.replaceChildren(msg('warn', 'No run matches.')); return; }
    const A = ACTIONS[action];
    const sf = serverFilter(query);
    if (server !== false && sf) {
      // The service counts and acts itself: a dry run first says how many.
      const f = Object.assign({}, sf, action === 'retry' ? { status: 'failed' } : {});
      if (action === 'retry' && sf.status && sf.status !== 'failed') { area.replaceChildren(msg('warn', 'Only failed runs are retried: this filter takes none.')); return; }
      let dry = null;
      try { dry = await ctx.rt('POST', '/run-operations', { action, filter: f, reason: 'count', dry_run: true }); } catch (e) {
        if (!(e.status === 404 && /does not reach/.test(e.message))) { area.replaceChildren(msg('bad', problem(e))); return; }
        server = false;
      }
      if (dry) return confirmServer(action, f, dry.matched);
    }
    area.replaceChildren(msg('', 'Counting the runs that match…'));
    let m;
    try { m = await matching(ctx, query, matches, action); } catch (e) { area.replaceChildren(msg('bad', problem(e))); return; }
    if (!m.ids.length) {
      area.replaceChildren(msg('warn', 'No run that matches can be ' + A.done + (action === 'retry' ? ' (only failed runs are retried).' : ' (only running or paused runs can be).')));
      return;
    }
    const reason = el('input', { id: 'bulk-reason', type: 'text', size: 40, required: true, placeholder: 'Why' });
    const go = el('button', { type: 'submit', className: 'btn danger', text: A.verb + ' ' + m.ids.length + ' runs' });
    const form = el('form', { className: 'confirm', 'aria-label': A.verb + ' many runs' }, [
      el('p', { id: 'bulk-count', text: 'This will ' + action + ' ' + m.ids.length + ' run' + (m.ids.length === 1 ? '' : 's') + ' (' + filterText + ')' + (m.capped ? ', the first ' + MAX + ' only' : '') + '.' }),
      el('label', { for: 'bulk-reason', text: 'Reason (recorded with each run)' }), reason,
      el('div', { className: 'row' }, [go, el('button', { type: 'button', className: 'btn secondary', text: 'Back', onclick: () => area.replaceChildren() })])]);
    form.addEventListener('submit', (ev) => { ev.preventDefault(); if (reason.value.trim()) run(action, m.ids, reason.value.trim()); });
    area.replaceChildren(form);
    reason.focus();
  }

  function confirmServer(action, f, n) {
    const A = ACTIONS[action];
    if (!n) { area.replaceChildren(msg('warn', 'No run that matches can be ' + A.done + '.')); return; }
    const reason = el('input', { id: 'bulk-reason', type: 'text', size: 40, required: true, placeholder: 'Why' });
    const form = el('form', { className: 'confirm', 'aria-label': A.verb + ' many runs' }, [
      el('p', { id: 'bulk-count', text: 'This will ' + action + ' ' + n + ' run' + (n === 1 ? '' : 's') + ' (' + filterText + ').' }),
      el('label', { for: 'bulk-reason', text: 'Reason (recorded with each run)' }), reason,
      el('div', { className: 'row' }, [el('button', { type: 'submit', className: 'btn danger', text: A.verb + ' ' + n + ' runs' }),
        el('button', { type: 'button', className: 'btn secondary', text: 'Back', onclick: () => area.replaceChildren() })])]);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!reason.value.trim()) return;
      let op;
      try { op = await ctx.rt('POST', '/run-operations', { action, filter: f, reason: reason.value.trim() }); } catch (e) { area.replaceChildren(msg('bad', problem(e))); return; }
      const bar = el('progress', { max: String(op.matched || n), value: '0', 'aria-label': A.verb + ' progress' });
      const line = el('p', { role: 'status', 'aria-live': 'polite' }, serverOutcome(op, nameOf));
      area.replaceChildren(el('div', { className: 'progress' }, [bar, line]));
      while (ctx.shown() && op.status !== 'completed') {
        await new Promise((res) => setTimeout(res, 700));
        try { op = await ctx.rt('GET', '/run-operations/' + encodeURIComponent(op.id)); } catch (e) { line.replaceChildren(msg('bad', problem(e))); return; }
        bar.max = op.matched || n;
        bar.value = op.done + op.skipped + op.failed;
        line.replaceChildren(...serverOutcome(op, nameOf));
      }
      if (done && ctx.shown()) done();
    });
    area.replaceChildren(form);
    reason.focus();
  }

  async function run(action, ids, reason) {
    const A = ACTIONS[action];
    const op = { id: 'op-' + Date.now(), action, filter: filterText, reason, at: new Date().toISOString(), total: ids.length, ok: 0, refused: [], state: 'running' };
    const bar = el('progress', { max: String(ids.length), value: '0', 'aria-label': A.verb + ' progress' });
    const line = el('p', { role: 'status', 'aria-live': 'polite' });
    let stop = false;
    const stopBtn = el('button', { type: 'button', className: 'btn secondary', text: 'Stop', onclick: () => { stop = true; } });
    area.replaceChildren(el('div', { className: 'progress' }, [bar, line, stopBtn]));
    const body = action === 'cancel' ? { reason } : { reason };
    let i = 0;
    // Four at a time: fast enough for thousands, gentle with the service.
    async function worker() {
      while (i < ids.length && !stop) {
        const id = ids[i++];
        try { await ctx.rt('POST', A.path(id), body); op.ok++; } catch (e) {
          op.refused.push({ id, why: problem(e) });
          if (e.status === 404 && e.code === 'not_found' && /does not reach/.test(e.message)) { stop = true; }
        }
        bar.value = op.ok + op.refused.length;
        line.replaceChildren(...outcome(op));
        keep(ctx.org, op);
      }
    }
    await Promise.all([worker(), worker(), worker(), worker()]);
    op.state = stop && op.ok + op.refused.length < op.total ? 'stopped' : 'done';
    op.ended = new Date().toISOString();
    keep(ctx.org, op);
    // The list is read again (the runs changed); the outcome is in the panel's list.
    if (done && ctx.shown()) done(); else { area.replaceChildren(); drawHistory(); }
  }

  return panel;
}
