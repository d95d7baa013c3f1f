// Tasks: the approvals and forms waiting for a person, read again every few seconds. A
// management token sees the organization's; an SDK session the signed-in person's
// (/sdk/tasks). An approval shows what it asks (request_payload) and is decided in place; a
// form is filled in in place with the SDK's renderer; a card decided (here or elsewhere)
// goes away, what is typed in the others stays.
import { el, when, fail, json, msg, problem } from './ui.js';
import { formElement } from './run.js';

export const route = { name: 'tasks', title: 'Tasks', nav: true, session: true, pattern: /^\/tasks$/ };

// list is the tasks as one shape: {id, kind, run_id, step_id, approver_role, assignee_role,
// comment, request_payload, schema, expected_keys, expires_at, created_at}.
async function list(ctx) {
  if (ctx.session) {
    const page = await ctx.api('GET', '/sdk/tasks');
    return (page.items || []).map((t) => Object.assign({ id: t.kind + ':' + t.task_id }, t));
  }
  const [ap, fo] = await Promise.all([ctx.rt('GET', '/approvals?status=pending&limit=200'), ctx.rt('GET', '/forms/pending?limit=200')]);
  return (ap.items || []).map((a) => Object.assign({ id: 'approval:' + a.approval_id, kind: 'approval', task_id: a.approval_id }, a))
    .concat((fo.items || []).map((p) => Object.assign({ id: 'form:' + p.form_pause_id, kind: 'form', task_id: p.form_pause_id }, p)))
    .sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)));
}

function runLink(ctx, t) {
  if (ctx.session) return el('span', { className: 'muted', text: 'run ' + t.run_id });
  return el('a', { href: '/console/runs/' + encodeURIComponent(t.run_id), text: 'run ' + t.run_id.replace(/^run-/, '').slice(0, 8), 'aria-label': 'Run ' + t.run_id });
}

function card(ctx, t, gone) {
  const li = el('li', { className: 'card task', 'data-kind': t.kind, 'data-task': t.id, 'data-run': t.run_id });
  const meta = el('p', { className: 'muted' }, [runLink(ctx, t), ' · step #' + t.step_id, t.created_at ? ' · since ' + when(t.created_at) : '', t.expires_at ? ' · open until ' + when(t.expires_at) : '']);
  if (t.kind === 'approval') {
    const note = el('input', { id: 'c-' + t.task_id, type: 'text', size: 36 });
    const out = msg('', '');
    const buttons = [
      el('button', { type: 'button', className: 'btn', text: 'Approve', onclick: () => decide(true) }),
      el('button', { type: 'button', className: 'btn secondary', text: 'Reject', onclick: () => decide(false) })];
    async function decide(ok) {
      buttons.forEach((b) => { b.disabled = true; });
      try {
        if (ctx.session) await ctx.api('POST', '/sdk/tasks/' + encodeURIComponent(t.task_id) + '/decide', { approved: ok, comment: note.value });
        else await ctx.rt('POST', '/approvals/' + encodeURIComponent(t.run_id) + '/' + t.step_id, { approved: ok, comment: note.value });
        gone(li, (ok ? 'Approved' : 'Rejected') + ': run ' + t.run_id + '.');
      } catch (e) {
        buttons.forEach((b) => { b.disabled = false; });
        out.className = 'msg bad'; out.textContent = problem(e);
        if (e.status === 409 || e.status === 404) gone(li, 'Already decided: run ' + t.run_id + '.');
      }
    }
    const payload = t.request_payload && (typeof t.request_payload !== 'object' || Object.keys(t.request_payload).length) ? t.request_payload : null;
    li.append(...[el('h3', { text: 'Approval for ' + t.approver_role }), meta, t.comment ? el('p', { className: 'ask', text: t.comment }) : null,
      payload ? el('div', {}, [el('h4', { text: 'What is asked' }), json(payload, { className: 'json payload' })]) : null,
      el('label', { for: 'c-' + t.task_id, text: 'Comment (optional)' }), note, el('div', { className: 'row' }, buttons), out].filter(Boolean));
    return li;
  }
  const body = el('div');
  li.append(el('h3', { text: 'Form to fill in' + (t.assignee_role ? ' (for ' + t.assignee_role + ')' : '') }), meta, body);
  const submit = ctx.session
    ? (data) => ctx.api('POST', '/sdk/forms/run/' + encodeURIComponent(t.run_id) + '/' + t.step_id + '/submit', { data })
    : null;
  body.appendChild(formElement(ctx, t.run_id, t.step_id, t, () => gone(li, 'Sent: run ' + t.run_id + ' goes on.', 1500), submit));
  return li;
}

export async function render(ctx, main) {
  const live = el('p', { className: 'visually-hidden', 'aria-live': 'polite', id: 'tasks-live' });
  const count = el('p', { className: 'muted', id: 'tasks-count' });
  const ul = el('ul', { className: 'tasks', style: 'list-style:none;padding:0' });
  main.replaceChildren(el('h2', { text: ctx.session ? 'Your tasks' : 'Tasks' }), count, live, ul);
  const cards = new Map(); // task id -> li

  function counted() {
    count.textContent = cards.size ? cards.size + ' waiting for a person.' : (ctx.session ? 'Nothing waits for you.' : 'No pending task.');
  }
  // gone takes a decided card away (after a moment, to read its outcome) and says so.
  function gone(li, text, delay) {
    live.textContent = text;
    const id = li.dataset.task;
    const moveFocus = li.contains(document.activeElement);
    setTimeout(() => {
      const next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      cards.delete(id);
      counted();
      if (moveFocus) (next ? next.querySelector('button, input, a') : main.querySelector('h2')).focus();
    }, delay || 0);
    cards.set(id, null); // not listed again meanwhile
  }

  async function load() {
    const tasks = await list(ctx);
    if (!ctx.shown()) return;
    const ids = new Set(tasks.map((t) => t.id));
    for (const [id, li] of cards) {
      if (!ids.has(id) && li) { li.remove(); cards.delete(id); live.textContent = 'A task was taken care of elsewhere.'; }
    }
    // Newest first: new tasks go on top, in their order; the others keep their place.
    const first = ul.firstChild;
    let added = 0;
    for (const t of tasks) {
      if (cards.has(t.id)) continue;
      const li = card(ctx, t, gone);
      cards.set(t.id, li);
      ul.insertBefore(li, first);
      added++;
    }
    if (added && cards.size > added) live.textContent = added === 1 ? 'A new task.' : added + ' new tasks.';
    counted();
  }
  try { await load(); } catch (e) { fail(ul, e); return; }
  ctx.every(3000, load);
}
