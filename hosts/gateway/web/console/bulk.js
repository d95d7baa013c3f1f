// Many runs at once: cancel (or retry) every run that matches the runs page's filter. The
// service does the work (POST /run-operations): a dry run first says how many runs the
// operation touches, then the operation's progress is read from GET /run-operations/{id},
// and its outcome is kept by the service: the organization's past operations (GET
// /run-operations) are listed with their filter, reason, actor, counts and refused runs.
import { el, when, problem, msg, openDialog } from './ui.js';

const ACTIONS = {
  cancel: { verb: 'Cancel', done: 'cancelled', statuses: ['running', 'paused'] },
  retry: { verb: 'Retry', done: 'retried', statuses: ['failed'] },
};
const POLL_MS = 700;

// focusAfter is the operation whose outcome takes the focus when the page is drawn again
// after it ended (the panel is rebuilt then; the keyboard's place is its line).
let focusAfter = null;

// operationFilter is the filter POST /run-operations takes for the runs list's query (from
// runsQuery) and an action: the list's filter as it is, its status narrowed to the statuses
// the action touches (cancel: running or paused; retry: failed). null when the list's
// status is one the action cannot touch.
export function operationFilter(query, action) {
  const q = new URLSearchParams(query);
  const f = {};
  for (const k of ['workflow_id', 'created_after', 'created_before', 'run_id', 'key']) {
    if (q.get(k)) f[k] = q.get(k);
  }
  const wanted = ACTIONS[action].statuses;
  const s = q.get('status');
  if (s && !wanted.includes(s)) return null;
  f.status = s ? [s] : wanted.slice();
  return f;
}

// filterText writes an operation's filter as a person reads it.
function filterText(f, nameOf) {
  const parts = [];
  if (f.workflow_id) parts.push('workflow ' + (nameOf ? nameOf(f.workflow_id) : f.workflow_id));
  if ((f.status || []).length) parts.push('status ' + f.status.join(' or '));
  if (f.created_after) parts.push('from ' + when(f.created_after));
  if (f.created_before) parts.push('until ' + when(f.created_before));
  if (f.run_id) parts.push('run ' + f.run_id);
  if (f.key) parts.push('key ' + f.key);
  return parts.length ? parts.join(', ') : 'all runs';
}

// counts is what an operation did so far, in words.
function counts(op) {
  const A = ACTIONS[op.action] || { done: op.action };
  if (op.status === 'pending') return 'counting the runs';
  return op.done + ' of ' + op.matched + ' ' + A.done +
    (op.skipped ? ', ' + op.skipped + ' skipped (needed nothing by then)' : '') +
    (op.failed ? ', ' + op.failed + ' refused' : '') +
    (op.status === 'running' ? ' (running)' : '');
}

// operationItem is one operation of the list: what, on which runs, why, by whom, its
// counts, and the runs it was refused on (links to them).
function operationItem(op, nameOf) {
  const A = ACTIONS[op.action] || { verb: op.action };
  const li = el('li', { 'data-op': op.id, 'data-status': op.status }, [
    el('strong', { text: A.verb + ' ' + filterText(op.filter || {}, nameOf) }), ' — ',
    el('span', { className: 'op-counts', text: counts(op) }),
    el('span', { className: 'muted', text: ' · ' + when(op.created_at) + (op.actor && op.actor.id ? ' · by ' + op.actor.id : '') + ' · \u201c' + op.reason + '\u201d' })]);
  if ((op.errors || []).length) {
    li.appendChild(el('details', {}, [el('summary', { text: 'Refused runs (' + op.failed + ')' }), el('ul', {}, op.errors.map((x) =>
      el('li', {}, [el('a', { href: '/console/runs/' + encodeURIComponent(x.run_id), text: x.run_id }), ': ' + x.message])))]));
  }
  return li;
}

export function bulkPanel(ctx, query, listFilterText, done, nameOf) {
  const area = el('div', { className: 'bulk-area' });
  const past = el('ul', { className: 'ops', id: 'run-operations', 'aria-label': 'Operations on many runs' });
  const buttons = {
    cancel: el('button', { type: 'button', className: 'btn secondary', text: 'Cancel matching runs…', onclick: () => plan('cancel') }),
    retry: el('button', { type: 'button', className: 'btn secondary', text: 'Retry matching failed runs…', onclick: () => plan('retry') }) };
  const panel = el('details', { className: 'card bulk', id: 'bulk' }, [
    el('summary', { text: 'Act on every run that matches' }),
    el('p', { className: 'muted', text: 'The filter: ' + listFilterText + '.' }),
    el('div', { className: 'row' }, [
      buttons.cancel, buttons.retry]),
    area,
    el('h3', { className: 'ops-title', text: 'Past operations' }), past]);

  // The organization's operations, newest first; read again while one of them works.
  let watching = false;
  async function drawPast(first) {
    let list;
    try { list = await ctx.rt('GET', '/run-operations?limit=10'); } catch (e) { past.replaceChildren(el('li', {}, [msg('bad', problem(e))])); return; }
    if (!ctx.shown()) return;
    const items = list.items || [];
    past.replaceChildren(...items.map((op) => operationItem(op, nameOf)));
    if (!items.length) past.replaceChildren(el('li', { className: 'muted', text: 'None yet.' }));
    const mine = focusAfter && past.querySelector('[data-op="' + focusAfter + '"]');
    const working = items.some((o) => o.status !== 'completed');
    // Open while one works, or just after one ended (the page is drawn again then).
    if (first && items.some((o) => o.status !== 'completed' || Date.now() - new Date(o.finished_at || 0).getTime() < 15000)) panel.open = true;
    if (mine && first) { focusAfter = null; panel.open = true; mine.setAttribute('tabindex', '-1'); mine.focus(); }
    if (working && !watching) {
      watching = true;
      setTimeout(() => { watching = false; if (ctx.shown()) drawPast(false); }, POLL_MS * 3);
    }
  }
  drawPast(true);

  async function plan(action) {
    const A = ACTIONS[action];
    if (query === null) { area.replaceChildren(msg('warn', 'No run matches.')); return; }
    const f = operationFilter(query, action);
    if (!f) { area.replaceChildren(msg('warn', action === 'retry' ? 'Only failed runs are retried: this filter takes none.' : 'Only running or paused runs are cancelled: this filter takes none.')); return; }
    area.replaceChildren(msg('', 'Counting the runs that match…'));
    let dry;
    try { dry = await ctx.rt('POST', '/run-operations', { action, filter: f, reason: A.verb + ' (count)', dry_run: true }); } catch (e) { area.replaceChildren(msg('bad', problem(e))); return; }
    if (!ctx.shown()) return;
    const n = dry.matched;
    if (!n) { area.replaceChildren(msg('warn', 'No run that matches can be ' + A.done + '.')); return; }
    const reason = el('input', { id: 'bulk-reason', type: 'text', size: 40, required: true, maxlength: 2000 });
    const out = msg('', '');
    let d = null;
    const form = el('form', { className: 'confirm' }, [
      el('p', { id: 'bulk-count', text: 'This will ' + action + ' ' + n + ' run' + (n === 1 ? '' : 's') + ' (' + filterText(f, nameOf) + ').' }),
      el('label', { for: 'bulk-reason', text: 'Reason (recorded with each run)' }), reason,
      el('div', { className: 'row' }, [el('button', { type: 'submit', className: 'btn danger', text: A.verb + ' ' + n + ' run' + (n === 1 ? '' : 's') }),
        el('button', { type: 'button', className: 'btn secondary', text: 'Back', onclick: () => d.close() })]), out]);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (!reason.value.trim()) { out.className = 'msg bad'; out.textContent = 'Say why: the reason is kept with each run.'; reason.focus(); return; }
      d.close();
      start(action, f, reason.value.trim(), n);
    });
    area.replaceChildren();
    const opener = buttons[action];
    d = openDialog(area, { id: 'bulk-dialog', title: A.verb + ' many runs', body: form, first: reason, describedBy: 'bulk-count', returnTo: () => opener });
  }

  // start creates the operation and follows it until the service says it is completed.
  async function start(action, f, reason, n) {
    const A = ACTIONS[action];
    let op;
    try { op = await ctx.rt('POST', '/run-operations', { action, filter: f, reason }); } catch (e) { area.replaceChildren(msg('bad', problem(e))); return; }
    const bar = el('progress', { id: 'bulk-progress', max: String(n), value: '0', 'aria-label': A.verb + ' progress' });
    const line = el('p', { role: 'status', 'aria-live': 'polite', id: 'bulk-status', text: A.verb + ': ' + counts(op) + '.' });
    area.replaceChildren(el('div', { className: 'progress' }, [bar, line]));
    drawPast(false);
    while (ctx.shown() && op.status !== 'completed') {
      await new Promise((res) => setTimeout(res, POLL_MS));
      if (!ctx.shown()) return;
      try { op = await ctx.rt('GET', '/run-operations/' + encodeURIComponent(op.id)); } catch (e) { line.replaceChildren(msg('bad', problem(e))); return; }
      if (op.status !== 'pending') bar.max = String(op.matched || 1);
      bar.value = String(op.done + op.skipped + op.failed);
      line.textContent = A.verb + ': ' + counts(op) + '.';
    }
    // The list is read again (the runs changed); the outcome is in the panel's list, and
    // the focus goes there if it was in the panel.
    if (panel.contains(document.activeElement) || document.activeElement === document.body) focusAfter = op.id;
    if (done && ctx.shown()) done();
  }

  return panel;
}
