// Tasks: the approvals and forms waiting for a person. A management token sees the
// organization's; an SDK session sees the signed-in person's (/sdk/tasks).
import { el, fail, problem } from './ui.js';

export const route = { name: 'tasks', title: 'Tasks', nav: true, session: true, pattern: /^\/tasks$/ };

function decisionRow(text, decide) {
  const note = el('input', { type: 'text', 'aria-label': 'Comment', placeholder: 'Comment (optional)' });
  const msg = el('div', { className: 'msg', role: 'status' });
  async function go(ok) {
    try { await decide(ok, note.value); msg.className = 'msg good'; msg.textContent = ok ? 'Approved.' : 'Rejected.'; } catch (e) { msg.className = 'msg bad'; msg.textContent = problem(e); }
  }
  return el('div', {}, [el('p', { text: text }), el('div', { className: 'row' }, [note,
    el('button', { type: 'button', className: 'btn', text: 'Approve', onclick: () => go(true) }),
    el('button', { type: 'button', className: 'btn secondary', text: 'Reject', onclick: () => go(false) })]), msg]);
}

export async function render(ctx, main) {
  const box = el('div');
  main.replaceChildren(el('h2', { text: ctx.session ? 'Your tasks' : 'Tasks' }), box);
  try {
    const items = [];
    if (ctx.session) {
      const page = await ctx.api('GET', '/sdk/tasks');
      for (const t of page.items || []) {
        if (t.kind === 'approval') items.push(el('li', { className: 'card', 'data-kind': 'approval' }, [el('h3', { text: 'Approval for ' + t.approver_role + ' — run ' + t.run_id }),
          decisionRow(t.comment || '', (ok, comment) => ctx.api('POST', '/sdk/tasks/' + encodeURIComponent(t.task_id) + '/decide', { approved: ok, comment }))]));
        else items.push(el('li', { className: 'card', 'data-kind': 'form' }, [el('h3', { text: 'Form to fill — run ' + t.run_id + ', step ' + t.step_id })]));
      }
    } else {
      const [ap, fo] = await Promise.all([ctx.rt('GET', '/approvals?status=pending&limit=200'), ctx.rt('GET', '/forms/pending?limit=200')]);
      for (const a of ap.items || []) items.push(el('li', { className: 'card', 'data-kind': 'approval' }, [el('h3', { text: 'Approval for ' + a.approver_role + ' — run ' + a.run_id }),
        decisionRow(a.comment || '', (ok, comment) => ctx.rt('POST', '/approvals/' + encodeURIComponent(a.run_id) + '/' + a.step_id, { approved: ok, comment }))]));
      for (const p of fo.items || []) items.push(el('li', { className: 'card', 'data-kind': 'form' }, [el('h3', { text: 'Form to fill — run ' + p.run_id + ', step ' + p.step_id })]));
    }
    box.replaceChildren(items.length ? el('ul', { className: 'tasks', style: 'list-style:none;padding:0' }, items) : el('p', { text: 'No pending task.' }));
  } catch (e) { fail(box, e); }
}
