// Forms: the organization's external forms and, for one, its submissions (who sent what,
// when, and the run it started).
import { el, when } from './ui.js';
import { link, heading, pagedTable, short } from './pagekit.js';

export const route = { name: 'forms', title: 'Forms', nav: true, pattern: /^\/forms(?:\/([^/]+))?$/ };

export async function render(ctx, main, match) {
  if (match[1]) return form(ctx, main, decodeURIComponent(match[1]));
  main.replaceChildren(heading('Forms', 'External forms: a hosted page or an embedded <svc-form> that starts a workflow.'), el('div', { className: 'card' }, [pagedTable('Forms', [
    { title: 'Name', cell: (f) => link('/forms/' + encodeURIComponent(f.id), f.name) },
    { title: 'Access', cell: (f) => f.is_public ? ((f.settings || {}).requireAuth ? 'public, signed in' : 'public') : 'private' },
    { title: 'Starts', cell: (f) => f.trigger_workflow_id ? link('/workflows/' + encodeURIComponent(f.trigger_workflow_id), 'workflow', { title: f.trigger_workflow_id }) : (f.trigger_process_id ? 'process ' + f.trigger_process_id : 'nothing') },
    { title: 'Expires', cell: (f) => f.expires_at ? when(f.expires_at) : 'never' },
    { title: 'Created', cell: (f) => when(f.created_at) },
  ], (cursor) => ctx.rt('GET', '/external-forms?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')), { empty: 'No form yet.' })]));
}

function fieldsOf(schema) {
  return ((schema && schema.pages) || []).flatMap((p) => p.fields || []).filter((f) => f.key && !['content', 'computed'].includes(f.type));
}

async function form(ctx, main, id) {
  const f = await ctx.rt('GET', '/external-forms/' + encodeURIComponent(id));
  const fields = fieldsOf(f.schema).slice(0, 6);
  const value = (v) => v === undefined || v === null ? '' : typeof v === 'object' ? el('code', { text: JSON.stringify(v) }) : String(v);
  const subs = pagedTable('Submissions', [
    { title: 'Submitted', cell: (s) => when(s.submitted_at) },
    { title: 'By', cell: (s) => s.submitted_by || 'anonymous' },
    ...fields.map((fl) => ({ title: fl.label || fl.key, cell: (s) => value((s.payload || {})[fl.key]) })),
    { title: 'Run', cell: (s) => s.triggered_run_id ? link('/runs/' + encodeURIComponent(s.triggered_run_id), s.triggered_run_id.slice(0, 12) + '…', { title: s.triggered_run_id, 'aria-label': 'Run ' + s.triggered_run_id }) : '' },
    { title: 'Submission', cell: (s) => short(s.submission_id) },
  ], (cursor) => ctx.rt('GET', '/external-forms/' + encodeURIComponent(id) + '/submissions?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')),
  { empty: 'No submission yet.' });
  main.replaceChildren(el('p', {}, [link('/forms', '← Forms')]), heading(f.name, f.description || f.id),
    el('div', { className: 'card' }, [
      el('p', {}, [f.is_public ? el('a', { href: '/forms/' + encodeURIComponent(f.id), target: '_blank', rel: 'noopener', text: 'Open the hosted page' }) : 'Private: filled through the API or a signed-in SDK.',
        ' · ', fieldsOf(f.schema).length + ' fields']),
      el('h3', { text: 'Submissions' }), subs]));
}
