// Workflows: the organization's workflows with their versions; one workflow's steps drawn
// as nested boxes (the kind of each step, its filter, a loop's steps, a pause), its JSON,
// and what changed between two of its versions.
import { el, when } from './ui.js';
import { link, heading, problem, pretty, lineDiff, pagedTable, jsonBlock } from './pagekit.js';

export const route = { name: 'workflows', title: 'Workflows', nav: true, pattern: /^\/workflows(?:\/([^/]+))?$/ };

export async function render(ctx, main, match) {
  if (match[1]) return workflow(ctx, main, decodeURIComponent(match[1]));
  main.replaceChildren(heading('Workflows', 'Every update stores a new version; a run keeps the version it started with.'),
    el('div', { className: 'card' }, [pagedTable('Workflows', [
      { title: 'Name', cell: (w) => link('/workflows/' + encodeURIComponent(w.id), w.name) },
      { title: 'Version', cell: (w) => 'v' + w.version },
      { title: 'Steps', cell: (w) => String(countSteps((w.definition || {}).actions)) },
      { title: 'Trigger', cell: (w) => trigger(w.definition || {}) },
      { title: 'Updated', cell: (w) => when(w.updated_at) },
    ], (cursor) => ctx.rt('GET', '/workflows?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')), { empty: 'No workflow yet: POST /workflows.' })]));
}

function countSteps(actions) {
  return (actions || []).reduce((n, a) => n + 1 + countSteps(((a || {}).properties || {}).steps) + (a && a.onFalse ? countSteps([a.onFalse]) : 0), 0);
}

function trigger(def) {
  const s = def.schedule;
  if (!s) return 'on request';
  return 'scheduled: ' + [s.every && 'every ' + s.every, s.at && 'at ' + s.at, s.timezone].filter(Boolean).join(' ');
}

// kindOf names what a step is, for its badge: a pause for a person, a loop, a table, a
// match, or an action (a registered or built-in call).
export function kindOf(step) {
  const t = String(step.type || '');
  const p = step.properties || {};
  if (/approval/i.test(t)) return ['pause', 'waits for an approval' + (p.approver_role ? ' by ' + p.approver_role : '')];
  if (/form/i.test(t)) return ['pause', 'waits for a form' + (p.expected_keys ? ': ' + p.expected_keys.join(', ') : '')];
  if (t === 'loop' || Array.isArray(p.steps)) return ['loop', 'for each of ' + (p.items || 'its items') + (p.max_iterations ? ', at most ' + p.max_iterations : '')];
  if (t === 'custom-table') return ['table', (p.operation || 'write') + ' ' + (p.table || p.table_name || '')];
  if (/match/i.test(t)) return ['match', 'reconciles ' + (p.legs ? p.legs.length + ' legs' : 'two legs')];
  if (/agent|llm/i.test(t)) return ['agent', p.model ? 'model ' + p.model : 'asks a model'];
  return ['action', ''];
}

// condText renders a condition object as one line a person reads ({"equal": [a, b]} →
// a equal b), falling back to its JSON.
function condText(c) {
  if (!c || typeof c !== 'object') return JSON.stringify(c);
  const [op, args] = Object.entries(c)[0] || [];
  if (!op) return '';
  if ((op === 'and' || op === 'or') && Array.isArray(args)) return args.map((a) => '(' + condText(a) + ')').join(' ' + op + ' ');
  if (op === 'not') return 'not (' + condText(Array.isArray(args) ? args[0] : args) + ')';
  if (Array.isArray(args)) return args.map((a) => typeof a === 'object' ? JSON.stringify(a) : String(a)).join(' ' + op + ' ');
  return op + ' ' + JSON.stringify(args);
}

// diagram draws steps as an ordered list of boxes, nested for a loop's steps and a
// filter's onFalse branch: the list itself is the text alternative a screen reader reads.
export function diagram(actions, label) {
  return el('ol', { className: 'flow', 'aria-label': label }, (actions || []).map((s, i) => {
    const [kind, what] = kindOf(s || {});
    const parts = [
      el('div', { className: 'flow-head' }, [el('span', { className: 'kind kind-' + kind, text: kind }), ' ',
        el('strong', {}, [el('code', { text: s.type })]), s.outputKey ? el('span', { className: 'sub', text: ' → @' + s.outputKey }) : null]),
      what ? el('div', { className: 'sub', text: what }) : null,
    ];
    if (s.filter) parts.push(el('div', { className: 'filter' }, ['only if ', el('code', { text: condText(s.filter.condition) })]));
    if (s.onFalse) parts.push(el('div', { className: 'branch' }, [el('div', { className: 'sub', text: 'otherwise:' }), diagram([s.onFalse], 'Otherwise, step #' + i)]));
    if (Array.isArray((s.properties || {}).steps)) parts.push(diagram(s.properties.steps, 'Steps of the loop at step #' + i));
    return el('li', { className: 'flow-step flow-' + kind, 'data-kind': kind }, parts);
  }));
}

async function workflow(ctx, main, id) {
  const w = await ctx.rt('GET', '/workflows/' + encodeURIComponent(id));
  const def = w.definition || {};
  const head = heading(w.name, `Version ${w.version} · updated ${when(w.updated_at)} · ${w.id}`);
  const gate = def.condition ? el('p', {}, ['Runs only if ', el('code', { text: condText(def.condition) })]) : null;
  const runs = el('p', {}, [link('/runs?workflow=' + encodeURIComponent(w.name), 'Runs of this workflow')]);
  const steps = el('section', { className: 'card', 'aria-labelledby': 'steps-h' }, [el('h3', { id: 'steps-h', text: 'Steps' }),
    el('p', { className: 'sub', text: trigger(def) }), gate, def.actions && def.actions.length ? diagram(def.actions, 'Steps of ' + w.name) : el('p', { text: 'No steps.' })]);
  const json = el('details', { className: 'card' }, [el('summary', { text: 'Definition (JSON)' }), jsonBlock(def, 'Definition of version ' + w.version)]);
  main.replaceChildren(el('p', {}, [link('/workflows', '← Workflows')]), head, runs, steps, json, await versions(ctx, w));
}

// versions compares two versions of w (the URL's ?from=&to=, by default the one before the
// current and the current).
async function versions(ctx, w) {
  const box = el('section', { className: 'card', 'aria-labelledby': 'diff-h' }, [el('h3', { id: 'diff-h', text: 'Changes between versions' })]);
  if (w.version < 2) { box.append(el('p', { text: 'This workflow has one version.' })); return box; }
  const clamp = (v, d) => { const n = parseInt(v, 10); return n >= 1 && n <= w.version ? n : d; };
  const from = clamp(ctx.query.get('from'), w.version - 1), to = clamp(ctx.query.get('to'), w.version);
  const pick = (id, label, v) => {
    const s = el('select', { id, name: id }, Array.from({ length: w.version }, (_, i) => el('option', { value: String(i + 1), selected: i + 1 === v, text: 'v' + (i + 1) })));
    return [el('label', { for: id, text: label }), s];
  };
  const [fl, fs] = pick('diff-from', 'From', from), [tl, ts] = pick('diff-to', 'To', to);
  const form = el('form', { className: 'row' }, [fl, fs, tl, ts, el('button', { className: 'btn', type: 'submit', text: 'Compare' })]);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); ctx.navigate('/workflows/' + encodeURIComponent(w.id), { from: fs.value, to: ts.value }); });
  const out = el('div', { 'aria-live': 'polite' });
  box.append(form, out);
  try {
    const get = (v) => v === w.version ? Promise.resolve(w) : ctx.rt('GET', '/workflows/' + encodeURIComponent(w.id) + '?version=' + v);
    const [a, b] = await Promise.all([get(from), get(to)]);
    const ops = lineDiff(pretty(a.definition), pretty(b.definition));
    const added = ops.filter((o) => o.op === '+').length, removed = ops.filter((o) => o.op === '-').length;
    out.append(el('p', { id: 'diff-summary', text: added + removed === 0 ? `v${from} and v${to} have the same definition.`
      : `From v${from} to v${to}: ${added} line${added === 1 ? '' : 's'} added, ${removed} removed` + (a.name !== b.name ? `; renamed from ${a.name} to ${b.name}` : '') + '.' }));
    if (added + removed) out.append(diffView(ops));
  } catch (e) { out.append(problem(e)); }
  return box;
}

// diffView shows the changed lines with three lines of context around each change; the
// runs of unchanged lines between are folded. A line's sign is text, not only a colour.
function diffView(ops) {
  const keep = new Uint8Array(ops.length);
  ops.forEach((o, i) => { if (o.op !== ' ') for (let j = Math.max(0, i - 3); j <= Math.min(ops.length - 1, i + 3); j++) keep[j] = 1; });
  const lines = [];
  let folded = 0;
  ops.forEach((o, i) => {
    if (!keep[i]) { folded++; return; }
    if (folded) { lines.push(el('span', { className: 'd-fold', text: `  … ${folded} unchanged line${folded === 1 ? '' : 's'}\n` })); folded = 0; }
    lines.push(el('span', { className: o.op === '+' ? 'd-add' : o.op === '-' ? 'd-del' : 'd-same', text: o.op + ' ' + o.text + '\n' }));
  });
  if (folded) lines.push(el('span', { className: 'd-fold', text: `  … ${folded} unchanged line${folded === 1 ? '' : 's'}\n` }));
  return el('pre', { className: 'diff', tabindex: '0', role: 'region', 'aria-label': 'Line differences: + added, - removed' }, lines);
}

