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

export function bulkPanel(ctx, query, matches, filterText) {
  const area = el('div', { className: 'bulk-area' });
  const history = el('ul', { className: 'ops', 'aria-label': 'Operations on many runs' });
  const panel = el('details', { className: 'card bulk', id: 'bulk' }, [
    el('summary', { text: 'Act on every run that matches' }),
    el('p', { className: 'muted', text: 'The filter: ' + filterText + '.' }),
    el('div', { className: 'row' }, [
      el('button', { type: 'button', className: 'btn secondary', text: 'Cancel matching runs…', onclick: () => plan('cancel') }),
      el('button', { type: 'button', className: 'btn secondary', text: 'Retry matching failed runs…', onclick: () => plan('retry') })]),
    area, history]);

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
    if (ops.length && !panel.open) panel.open = ops.some((o) => o.state === 'running');
  }
  drawHistory();

  async function plan(action) {
    if (query === null) { area.replaceChildren(msg('warn', 'No run matches.')); return; }
    const A = ACTIONS[action];
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
    keep(ctx.org, op);
    line.replaceChildren(...outcome(op));
    stopBtn.remove();
    drawHistory();
  }

  return panel;
}
