// Runs: the organization's runs, newest first.
import { el, status, when, fail } from './ui.js';

export const route = { name: 'runs', title: 'Runs', nav: true, pattern: /^\/runs$/ };

export async function render(ctx, main) {
  const box = el('div');
  main.replaceChildren(el('h2', { text: 'Runs' }), box);
  async function load() {
    const page = await ctx.rt('GET', '/runs?limit=50');
    if (!ctx.shown()) return;
    const rows = (page.items || []).map((r) => el('tr', {}, [
      el('td', {}, [el('a', { href: '/console/runs/' + encodeURIComponent(r.id), text: r.id })]),
      el('td', {}, [el('code', { text: r.workflow_id })]), el('td', {}, [status(r.status)]), el('td', { text: when(r.created_at) })]));
    box.replaceChildren(rows.length ? el('table', { className: 'card' }, [
      el('thead', {}, [el('tr', {}, [el('th', { text: 'Run' }), el('th', { text: 'Workflow' }), el('th', { text: 'Status' }), el('th', { text: 'Started' })])]),
      el('tbody', {}, rows)]) : el('p', { text: 'No runs yet.' }));
  }
  try { await load(); } catch (e) { fail(box, e); }
  ctx.every(3000, load);
}
