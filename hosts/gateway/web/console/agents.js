// Agents: standalone agent runs (POST /agents/execute) and, for one, its reasoning trace:
// thought, action and observation per iteration.
import { el, status, when } from './ui.js';
import { link, heading, pagedTable, problem, pretty } from './pagekit.js';

export const route = { name: 'agents', title: 'Agents', nav: true, pattern: /^\/agents(?:\/([^/]+))?$/ };

const STATUSES = ['', 'running', 'paused', 'completed', 'failed', 'cancelled'];

export async function render(ctx, main, match) {
  if (match[1]) return agent(ctx, main, decodeURIComponent(match[1]));
  const st = ctx.query.get('status') || '';
  const pick = el('select', { id: 'agent-status', name: 'status' }, STATUSES.map((s) => el('option', { value: s, selected: s === st, text: s || 'any' })));
  pick.addEventListener('change', () => ctx.navigate('/agents', pick.value ? { status: pick.value } : {}));
  main.replaceChildren(heading('Agents', 'Standalone agent runs and their reasoning.'), el('div', { className: 'card' }, [
    el('div', { className: 'filters' }, [el('div', {}, [el('label', { for: 'agent-status', text: 'Status' }), pick])]),
    pagedTable('Agent runs', [
      { title: 'Agent run', cell: (a) => link('/agents/' + encodeURIComponent(a.agent_run_id), a.agent_run_id) },
      { title: 'Status', cell: (a) => status(a.status) },
      { title: 'Iterations', cell: (a) => String(a.iterations || 0) },
      { title: 'Answer', cell: (a) => clip(a.final_answer || (a.pause && a.pause.question) || a.reason || '', 80) },
      { title: 'Started', cell: (a) => when(a.created_at) },
    ], (cursor) => ctx.rt('GET', '/agents?limit=50' + (st ? '&status=' + st : '') + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')),
    { empty: 'No agent run' + (st ? ' ' + st : '') + '.' })]));
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }

// traceView: one box per iteration, its thought, the action with its input, and what the
// action observed.
export function traceView(trace) {
  if (!trace || !trace.length) return el('p', { text: 'No iteration recorded.' });
  return el('ol', { className: 'trace', 'aria-label': 'Reasoning trace' }, trace.map((t) => el('li', { className: 'card trace-step', 'data-iteration': String(t.iteration) }, [
    el('h4', { text: 'Iteration ' + t.iteration }),
    el('dl', {}, [
      el('dt', { text: 'Thought' }), el('dd', { text: t.thought || '—' }),
      el('dt', { text: 'Action' }), el('dd', {}, [t.action ? el('code', { text: t.action }) : '—',
        t.action_input !== undefined && t.action_input !== null ? el('pre', { tabindex: '0', role: 'region', 'aria-label': 'Input of ' + t.action, text: pretty(t.action_input) }) : null]),
      el('dt', { text: 'Observation' }), el('dd', {}, [t.observation === undefined || t.observation === null ? '—'
        : typeof t.observation === 'string' ? t.observation : el('pre', { tabindex: '0', role: 'region', 'aria-label': 'Observation of iteration ' + t.iteration, text: pretty(t.observation) })]),
    ])])));
}

async function agent(ctx, main, id) {
  const [a, tr] = await Promise.all([ctx.rt('GET', '/agents/' + encodeURIComponent(id) + '/status'),
    ctx.rt('GET', '/agents/' + encodeURIComponent(id) + '/trace').catch((e) => ({ error: e }))]);
  const facts = el('dl', { className: 'facts' }, [
    el('dt', { text: 'Status' }), el('dd', {}, [status(a.status), a.reason ? ' — ' + a.reason : '']),
    el('dt', { text: 'Iterations' }), el('dd', { text: String(a.iterations || 0) }),
    a.confidence !== undefined ? el('dt', { text: 'Confidence' }) : null, a.confidence !== undefined ? el('dd', { text: String(a.confidence) }) : null,
    a.usage ? el('dt', { text: 'Tokens' }) : null, a.usage ? el('dd', { text: `${a.usage.total_tokens} (${a.usage.input_tokens} in, ${a.usage.output_tokens} out)` }) : null,
    el('dt', { text: 'Started' }), el('dd', { text: when(a.created_at) }),
    el('dt', { text: 'Updated' }), el('dd', { text: when(a.updated_at) }),
  ]);
  const answer = a.final_answer ? el('div', { className: 'card' }, [el('h3', { text: 'Final answer' }), el('p', { className: 'answer', text: a.final_answer })]) : null;
  const pause = a.pause ? el('div', { className: 'card' }, [el('h3', { text: 'Waiting for a person' }), el('p', { text: a.pause.question || '' }),
    a.pause.options && a.pause.options.length ? el('p', { text: 'Options: ' + a.pause.options.join(', ') }) : null]) : null;
  main.replaceChildren(...[el('p', {}, [link('/agents', '← Agents')]), heading('Agent run', id), el('div', { className: 'card' }, [facts]), answer, pause,
    el('section', { 'aria-labelledby': 'trace-h' }, [el('h3', { id: 'trace-h', text: 'Reasoning trace' }), tr.error ? problem(tr.error) : traceView(tr.trace)])].filter(Boolean));
}
