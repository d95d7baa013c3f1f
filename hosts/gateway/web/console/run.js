// A run at its own URL (/console/runs/<id>): what it is, what it waits for, the timeline of
// its steps (status, duration, attempts, error and its code; input, output, decisions and
// effects; a loop's elements and a large value paged through /runs/{id}/context/{key}; an
// agent's reasoning), its evidence and its events; and what a person can do to it: cancel,
// retry from the failed step, decide its approval, fill in its form. Read again every
// second or two while it has not ended, the open panels and the focus kept.
import { el, status, when, duration, between, fail, json, msg, problem, openDialog, ENDED } from './ui.js';

export const route = { name: 'run', section: 'runs', title: 'Run', nav: false, pattern: /^\/runs\/([^/]+)$/ };

const APPROVAL = 'PbotApproval';
const FORM = 'PbotForm';

// errorCode splits "code: detail" (the engine's errors) into its code and the rest.
export function errorCode(s) {
  const m = /^([a-z][a-z0-9_]*): ([\s\S]*)$/.exec(s || '');
  return m ? { code: m[1], text: m[2] } : { code: '', text: s || '' };
}

// waiting is what a step that holds a paused run waits for, in words; '' when it does not.
export function waiting(run, step, pending) {
  if (run.status !== 'paused' || step.status !== 'processing') return '';
  if (step.type === APPROVAL) {
    const role = (pending.approval && pending.approval.approver_role) || (step.input_summary && step.input_summary.approver_role);
    return 'waiting for approval' + (role ? ' by ' + role : '');
  }
  if (step.type === FORM) return 'waiting for a form';
  const kinds = (step.effects || []).map((e) => e.kind).join(' ');
  if (/agent/.test(kinds)) return 'waiting for the agent';
  if (/timer|wait|sleep/.test(kinds)) return 'waiting for its time';
  return 'waiting';
}

function stepStatus(run, step, pending) {
  const w = waiting(run, step, pending);
  return w ? status('waiting', w) : status(step.status, step.status === 'processing' ? 'running' : step.status);
}

// attempts are the tries a step's calls took (the highest reported), or null.
function attempts(step) {
  let n = null;
  for (const e of step.effects || []) {
    const d = e.detail || {};
    const t = d.tries || (Array.isArray(d.attempts) ? d.attempts.length : null);
    if (t) n = Math.max(n || 0, t);
    const m = /after (\d+) attempts/.exec(d.error || '');
    if (m) n = Math.max(n || 0, Number(m[1]));
  }
  const m = /after (\d+) attempts/.exec(step.error || '');
  if (m) n = Math.max(n || 0, Number(m[1]));
  return n;
}

// truncated says whether a summarised value stands for a larger one kept in the context.
function truncated(v) { return v && typeof v === 'object' && !Array.isArray(v) && v.truncated === true; }

// valueView shows a value; a truncated one becomes a pager over /runs/{id}/context/{key}.
function valueView(ctx, runId, key, v) {
  if (truncated(v)) return contextPager(ctx, runId, key, v);
  return json(v);
}

// compact is a value on one line when it is short (a loop's element, an effect's detail),
// else indented JSON.
function compact(v) {
  const line = JSON.stringify(v);
  return line !== undefined && line.length <= 160 ? el('code', { className: 'detail', text: line }) : json(v);
}

// contextPager pages a large context value: 20 elements at a time, never the whole.
function contextPager(ctx, runId, key, summary) {
  const size = 20;
  const box = el('div', { className: 'pager', 'data-key': key });
  const out = el('div');
  const line = el('p', { className: 'muted', 'aria-live': 'polite' });
  const prev = el('button', { type: 'button', className: 'btn secondary', text: '← Previous' });
  const next = el('button', { type: 'button', className: 'btn secondary', text: 'Next →' });
  let offset = 0;
  async function load() {
    try {
      const p = await ctx.rt('GET', '/runs/' + encodeURIComponent(runId) + '/context/' + encodeURIComponent(key) + '?offset=' + offset + '&limit=' + size);
      if (p.total === undefined) {
        out.replaceChildren(json(p.value));
        line.textContent = key + (summary.bytes ? ' (' + summary.bytes + ' bytes)' : '');
        prev.hidden = next.hidden = true;
        return;
      }
      const items = Array.isArray(p.value) ? p.value : [];
      out.replaceChildren(el('ol', { start: String(offset + 1), className: 'elements' }, items.map((x) => el('li', {}, [compact(x)]))));
      line.textContent = key + ': elements ' + (items.length ? (offset + 1) + '–' + (offset + items.length) : 'none') + ' of ' + p.total;
      prev.disabled = offset === 0;
      next.disabled = offset + size >= p.total;
    } catch (e) { out.replaceChildren(msg('bad', problem(e))); }
  }
  if (summary && summary.length === undefined) {
    // Not an array: shown only when asked, whole.
    const kb = summary.bytes ? Math.round(summary.bytes / 1024) + ' KB' : 'large';
    line.textContent = key + ': ' + kb + ', not loaded.';
    const whole = el('button', { type: 'button', className: 'btn secondary', text: 'Load it whole (' + kb + ')', onclick: () => { whole.remove(); load(); } });
    box.append(line, out, whole);
    return box;
  }
  prev.addEventListener('click', () => { offset = Math.max(0, offset - size); load(); });
  next.addEventListener('click', () => { offset += size; load(); });
  box.append(line, out, el('div', { className: 'row' }, [prev, next]));
  load();
  return box;
}

// outputView shows a step's output; a truncated member (a loop's elements, a matcher's
// groups) is paged by its key.
function outputView(ctx, runId, step, outputKey) {
  const o = step.output;
  if (o === undefined || o === null) return null;
  if (truncated(o)) return outputKey ? contextPager(ctx, runId, outputKey, o) : json(o);
  if (typeof o === 'object' && !Array.isArray(o) && Object.values(o).some(truncated)) {
    return el('div', {}, Object.entries(o).map(([k, v]) => el('div', {}, [el('h5', { text: k }), valueView(ctx, runId, k, v)])));
  }
  return json(o);
}

// traceView is an agent's reasoning: thought, action, observation per iteration.
function traceView(ctx, agentId) {
  const box = el('div', { className: 'trace', 'data-agent': agentId }, [el('p', { className: 'muted', text: 'Loading the agent\u2019s reasoning…' })]);
  ctx.rt('GET', '/agents/' + encodeURIComponent(agentId) + '/trace').then((t) => {
    const rows = (t.trace || []).map((x) => el('li', { className: 'iteration' }, [
      el('h5', { text: 'Iteration ' + x.iteration }),
      el('dl', { className: 'facts' }, [
        el('dt', { text: 'Thought' }), el('dd', { text: x.thought || '—' }),
        el('dt', { text: 'Action' }), el('dd', {}, [el('code', { text: x.action || '—' }), x.action_input !== undefined ? json(x.action_input) : null]),
        el('dt', { text: 'Observation' }), el('dd', {}, [x.observation !== undefined ? json(x.observation) : '—'])])]));
    box.replaceChildren(rows.length ? el('ol', { className: 'iterations' }, rows) : el('p', { className: 'muted', text: 'No iteration yet.' }));
  }, (e) => box.replaceChildren(msg('bad', problem(e))));
  return box;
}

function decisionsTable(list) {
  if (!list || !list.length) return null;
  return el('table', { className: 'decisions' }, [el('thead', {}, [el('tr', {}, ['Decision', 'Result', 'Why'].map((h) => el('th', { scope: 'col', text: h })))]),
    el('tbody', {}, list.map((d) => el('tr', {}, [el('td', {}, [el('code', { text: d.kind })]), el('td', {}, [typeof d.result === 'object' ? json(d.result) : String(d.result)]), el('td', { text: d.reason || '' })])))]);
}

function effectsTable(all, withStep) {
  if (!all || !all.length) return null;
  // A loop's thousands of writes: 20 lines, then 100 more at a time on request; a small
  // detail reads on one line.
  const detail = (d) => (!d || !Object.keys(d).length ? '' : compact(d));
  const row = (e) => el('tr', {}, [withStep ? el('td', { text: String(e.step_index) }) : null, el('td', {}, [el('code', { text: e.kind })]),
    el('td', { text: e.target || '' }), el('td', {}, [detail(e.detail)])]);
  const body = el('tbody', {}, all.slice(0, 20).map(row));
  const note = el('p', { className: 'muted' });
  const more = el('button', { type: 'button', className: 'btn secondary' });
  function shown() {
    const n = body.children.length;
    note.textContent = n < all.length ? 'Effects 1\u2013' + n + ' of ' + all.length + '.' : '';
    more.hidden = n >= all.length;
    more.textContent = 'Show ' + Math.min(100, all.length - n) + ' more effects';
  }
  more.addEventListener('click', () => { body.append(...all.slice(body.children.length, body.children.length + 100).map(row)); shown(); });
  shown();
  return el('div', {}, [el('table', { className: 'effects' }, [el('thead', {}, [el('tr', {}, [withStep ? 'Step' : null, 'Effect', 'Target', 'Detail'].filter(Boolean).map((h) => el('th', { scope: 'col', text: h })))]), body]),
    el('div', { className: 'row' }, [note, more])]);
}

// exceptionsTable shows the exception rows a match wrote (match.ExceptionRow: text columns),
// one row each; a row's details (JSON text: the legs' sums, the discrepancies) opens below it.
function exceptionsTable(list) {
  const cols = [['match_key', 'Match key'], ['classification', 'Classification'], ['missing_legs', 'Missing legs'], ['discrepancy_fields', 'Discrepancies'], ['status', 'Status']];
  const details = (x) => {
    if (!x.details) return '';
    let v = x.details;
    try { v = JSON.parse(x.details); } catch (e) { /* shown as written */ }
    return el('details', {}, [el('summary', { text: 'Details' }), typeof v === 'string' ? el('pre', { className: 'json', text: v }) : json(v)]);
  };
  return el('table', { className: 'exceptions' }, [el('thead', {}, [el('tr', {}, [...cols.map(([, h]) => h), 'Details'].map((h) => el('th', { scope: 'col', text: h })))]),
    el('tbody', {}, list.map((x) => (x && typeof x === 'object'
      ? el('tr', { 'data-key': x.match_key || '' }, [...cols.map(([k], i) => (i === 0 ? el('td', {}, [el('code', { text: x[k] || '' })]) : el('td', { text: x[k] || '' }))), el('td', {}, [details(x)])])
      : el('tr', {}, [el('td', { colspan: String(cols.length + 1) }, [json(x)])]))))]);
}

function stepItem(ctx, runId, run, step, pending, def, open, began) {
  if (!step.started_at && began) step = Object.assign({}, step, { started_at: began });
  const errc = errorCode(step.error);
  const tries = attempts(step);
  const ms = step.started_at ? between(step.started_at, step.finished_at || (ENDED.includes(run.status) ? (run.finished_at || run.updated_at) : null)) : null;
  const action = def && def.actions && def.actions[step.index];
  const outputKey = action && action.properties && (action.properties.outputKey || action.properties.output_key || action.properties.result_key);
  const agent = (step.effects || []).find((e) => /^agent_run_/.test(e.kind));
  const head = el('div', { className: 'step-head' }, [
    el('span', { className: 'step-n', text: '#' + step.index }),
    el('code', { className: 'step-type', text: step.type }),
    stepStatus(run, step, pending),
    ms !== null ? el('span', { className: 'muted', text: duration(ms) + (step.finished_at ? '' : ' so far') }) : null,
    tries && tries > 1 ? el('span', { className: 'muted', text: tries + ' attempts' }) : (tries === 1 ? el('span', { className: 'muted', text: '1 attempt' }) : null),
  ]);
  const body = [];
  if (step.error) {
    body.push(el('div', { className: 'msg bad step-error' }, [errc.code ? el('code', { className: 'err-code', text: errc.code }) : null, errc.code ? ' ' : null, errc.text]));
  }
  const details = el('details', { 'data-step': String(step.index), open: open }, [el('summary', { text: 'Input, output and evidence' })]);
  const inner = [];
  inner.push(el('dl', { className: 'facts' }, [
    el('dt', { text: 'Started' }), el('dd', { text: when(step.started_at) || '—' }),
    el('dt', { text: 'Finished' }), el('dd', { text: when(step.finished_at) || '—' }),
    outputKey ? el('dt', { text: 'Output key' }) : null, outputKey ? el('dd', {}, [el('code', { text: outputKey })]) : null]));
  inner.push(el('h4', { text: 'Input (resolved)' }), step.input_summary !== undefined ? json(step.input_summary) : el('p', { className: 'muted', text: 'Not recorded.' }));
  const out = outputView(ctx, runId, step, outputKey);
  inner.push(el('h4', { text: 'Output' }), out || el('p', { className: 'muted', text: step.finished_at ? 'None.' : 'Not yet.' }));
  if (agent) inner.push(el('h4', { text: 'Agent reasoning' }), traceView(ctx, agent.target));
  const dt = decisionsTable(step.decisions);
  if (dt) inner.push(el('h4', { text: 'Decisions' }), dt);
  const et = effectsTable(step.effects, false);
  if (et) inner.push(el('h4', { text: 'Effects' }), et);
  // The panel's content is built when it is opened (a loop's pages are not read before).
  let filled = false;
  function fill() { if (!filled && details.open) { filled = true; details.append(...inner); } }
  details.addEventListener('toggle', fill);
  fill();
  body.push(details);
  return el('li', { className: 'step s-' + step.status, 'data-step': String(step.index), 'data-status': step.status }, [head, ...body]);
}

export async function render(ctx, main, match) {
  const id = decodeURIComponent(match[1]);
  const base = '/runs/' + encodeURIComponent(id);
  const facts = el('div', { id: 'run-facts' });
  const actions = el('div', { className: 'row', id: 'run-actions' });
  const actionBox = el('div', { id: 'run-action' });
  const task = el('section', { id: 'run-task', 'aria-label': 'What the run waits for' });
  const timeline = el('ol', { id: 'steps', className: 'timeline', 'aria-label': 'Steps' });
  const context = el('div', { id: 'run-context' });
  const evidence = el('div', { id: 'evidence' });
  const events = el('div', { id: 'events' });
  const live = el('p', { className: 'visually-hidden', 'aria-live': 'polite', id: 'run-live' });
  main.replaceChildren(
    el('p', {}, [el('a', { href: '/console/runs', text: '← Runs' })]),
    el('h2', {}, ['Run ', el('code', { text: id })]),
    el('div', { className: 'card', id: 'run' }, [facts, actions, actionBox, live]),
    task,
    el('section', { className: 'card', 'aria-labelledby': 'h-steps' }, [el('h3', { id: 'h-steps', text: 'Steps' }), timeline]),
    el('section', { className: 'card', 'aria-labelledby': 'h-context' }, [el('h3', { id: 'h-context', text: 'Context' }), context]),
    el('section', { className: 'card', 'aria-labelledby': 'h-evidence' }, [el('h3', { id: 'h-evidence', text: 'Evidence' }), evidence]),
    el('section', { className: 'card', 'aria-labelledby': 'h-events' }, [el('h3', { id: 'h-events', text: 'Events' }), events]));

  let def = null;
  let wfName = '';
  let last = '';
  let lastStatus = '';
  let taskKey = '';
  let decided = false; // a decision made here: its answer is kept once the task is gone
  let lastEvents = null;
  const pending = { approval: null, form: null };

  async function definition(ev) {
    if (def) return;
    // The version the run started with (every update keeps the earlier ones), however many
    // workflows the organization has.
    try {
      const w = await ctx.rt('GET', '/workflows/' + encodeURIComponent(ev.workflow_id) + '?version=' + ev.workflow_version);
      wfName = w.name; def = w.definition;
    } catch (e) { /* names are a nicety */ }
  }

  async function load() {
    const [st, ev, evs] = await Promise.all([ctx.rt('GET', base + '/status'), ctx.rt('GET', base + '/evidence'), ctx.rt('GET', base + '/events?limit=500')]);
    if (!ctx.shown()) return;
    await definition(ev);
    const holder = (ev.steps || []).find((s) => s.status === 'processing');
    pending.approval = null; pending.form = null;
    if (st.status === 'paused' && holder && holder.type === APPROVAL) {
      try { pending.approval = await ctx.rt('GET', '/approvals/' + encodeURIComponent(id)); } catch (e) { /* decided meanwhile */ }
    }
    if (st.status === 'paused' && holder && holder.type === FORM) {
      try { pending.form = await ctx.rt('GET', '/forms/' + encodeURIComponent(id) + '/' + holder.index); } catch (e) { /* submitted meanwhile */ }
      if (pending.form && pending.form.status !== 'open') pending.form = null;
    }
    const sig = JSON.stringify([st.status, st.updated_at, ev.steps, ev.counts, (evs.items || []).length, !!pending.approval, !!pending.form]);
    if (sig === last) { ticking(st, ev); return; }
    last = sig;
    if (lastStatus && lastStatus !== st.status) live.textContent = 'The run is now ' + st.status + '.';
    lastStatus = st.status;
    lastEvents = evs;
    drawFacts(st, ev, holder);
    drawActions(st);
    drawTask(st, holder);
    drawSteps(st, ev);
    drawContext(st);
    drawEvidence(ev);
    drawEvents(evs);
  }

  function ticking() { /* durations of steps in flight: redrawn on the next change */ }

  function drawFacts(st, ev, holder) {
    const ended = ENDED.includes(st.status);
    const w = holder ? waiting(st, holder, pending) : '';
    facts.replaceChildren(el('dl', { className: 'facts' }, [
      el('dt', { text: 'Status' }), el('dd', { id: 'run-status' }, [status(st.status, st.status.replace(/_/g, ' ')), w ? ' ' + w : '', st.reason ? el('span', { className: 'muted', text: ' — ' + st.reason }) : null]),
      el('dt', { text: 'Workflow' }), el('dd', {}, [wfName ? el('a', { href: '/console/workflows/' + encodeURIComponent(st.workflow_id), text: wfName }) : el('code', { text: st.workflow_id }), el('span', { className: 'muted', text: ' v' + st.workflow_version })]),
      el('dt', { text: 'Started' }), el('dd', {}, [el('time', { datetime: st.created_at, text: when(st.created_at) })]),
      el('dt', { text: 'Ended' }), el('dd', { text: ended ? when(st.finished_at || st.updated_at) : '—' }),
      el('dt', { text: 'Duration' }), el('dd', { text: duration(between(st.created_at, ended ? (st.finished_at || st.updated_at) : null)) + (ended ? '' : ' so far') }),
      el('dt', { text: 'Input' }), el('dd', { id: 'run-input' }, [inputView(st, ev)]),
    ]));
  }

  // inputView: the run's input; a large one paged (the status document names it by
  // reference), kept across redraws.
  let inputBox = null;
  function inputView(st, ev) {
    const v = st.context && st.context.input;
    if (truncated(v)) { if (!inputBox) inputBox = contextPager(ctx, id, 'input', v); return inputBox; }
    return json(ev.input);
  }

  function drawActions(st) {
    const ended = ENDED.includes(st.status);
    const keepFocus = actions.contains(document.activeElement) ? document.activeElement.textContent : '';
    actions.replaceChildren(...[
      !ended ? el('button', { type: 'button', className: 'btn danger', text: 'Cancel run…', onclick: () => cancelForm() }) : null,
      st.status === 'failed' ? el('button', { type: 'button', className: 'btn', text: 'Retry from the failed step…', onclick: () => retryForm() }) : null].filter(Boolean));
    if (keepFocus) for (const b of actions.querySelectorAll('button')) if (b.textContent === keepFocus) b.focus();
  }

  // opener finds an action's button again (the actions are redrawn as the run changes):
  // the dialog it opened gives focus back to it.
  function opener(text) {
    return () => [...actions.querySelectorAll('button')].find((b) => b.textContent === text) || actions.querySelector('button') || main.querySelector('h2');
  }

  // done is an action's outcome below the buttons, focused (the button may be gone).
  function done(node) {
    node.setAttribute('tabindex', '-1');
    actionBox.replaceChildren(...[...actionBox.children].filter((c) => c.tagName === 'DIALOG'), node);
    return node;
  }

  function cancelForm() {
    const reason = el('input', { id: 'cancel-reason', type: 'text', size: 40, required: true });
    const out = msg('', '');
    let d = null;
    const form = el('form', { className: 'confirm' }, [
      el('label', { for: 'cancel-reason', text: 'Why cancel this run? (recorded with it)' }), reason,
      el('div', { className: 'row' }, [el('button', { type: 'submit', className: 'btn danger', text: 'Cancel the run' }),
        el('button', { type: 'button', className: 'btn secondary', text: 'Keep it running', onclick: () => d.close() })]), out]);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!reason.value.trim()) { out.className = 'msg bad'; out.textContent = 'Say why: the reason is kept with the run.'; reason.focus(); return; }
      try {
        await ctx.rt('POST', base + '/cancel', { reason: reason.value.trim() });
        d.close(done(msg('good', 'Cancelled.')));
        last = '';
        await load();
      } catch (e) { out.className = 'msg bad'; out.textContent = problem(e); }
    });
    actionBox.replaceChildren();
    d = openDialog(actionBox, { id: 'cancel-dialog', title: 'Cancel this run', body: form, first: reason, returnTo: opener('Cancel run…') });
  }

  async function retryForm() {
    actionBox.replaceChildren(msg('', 'Reading what a retry would do…'));
    let plan = null;
    try { plan = await ctx.rt('GET', base + '/retry-plan'); } catch (e) { actionBox.replaceChildren(msg('bad', problem(e))); return; }
    const reason = el('input', { id: 'retry-reason', type: 'text', size: 40, required: true });
    const out = msg('', '');
    const steps = plan.steps || [];
    const reused = plan.reused_steps || [];
    const from = (v) => v !== undefined && v !== null;
    // Each outside call as its kind, then method and host, then what it is (a table, a model).
    const callItem = (c) => el('li', { className: 'call' }, [el('strong', { text: c.kind }),
      c.method || c.host ? ' ' + [c.method, c.host].filter(Boolean).join(' ') : '', c.detail ? el('span', { className: 'muted', text: ' \u2014 ' + c.detail }) : null]);
    const totals = Object.entries(plan.calls || {}).filter(([, n]) => n > 0).map(([k, n]) => n + ' ' + k);
    // The webhooks the new run's events are delivered to: the catch-all webhook_url and each
    // registration of its events, a disabled one marked.
    const hooks = plan.webhooks || [];
    const hookItem = (c) => {
      const off = /\(disabled/.test(c.detail || '');
      const li = callItem(c);
      if (off) { li.dataset.disabled = 'true'; li.append(' ', el('span', { className: 'status disabled', text: 'disabled' })); }
      return li;
    };
    let d = null;
    const form = el('form', { className: 'confirm' }, [
      el('p', { id: 'retry-summary', text: 'A new run of version ' + (plan.workflow_version || '') + ' with the same input starts at step #' + (plan.from_step ?? '?') +
        (from(plan.from_element) ? ', element ' + plan.from_element + ' of its loop (the elements before it are not run again)' : '') + '. ' +
        (reused.length ? 'Reused, not run again: step' + (reused.length === 1 ? ' ' : 's ') + reused.map((i) => '#' + i).join(', ') + '. ' : 'No step before it is reused. ') +
        (totals.length ? 'Outside calls it makes again: ' + totals.join(', ') + '.' : 'It makes no outside call.') }),
      steps.length ? el('table', { id: 'retry-plan' }, [el('caption', { className: 'visually-hidden', text: 'The steps the retry runs' }),
        el('thead', {}, [el('tr', {}, ['Step', 'Type', 'Outside calls it makes', 'Notes'].map((h) => el('th', { scope: 'col', text: h })))]),
        el('tbody', {}, steps.map((s) => el('tr', { 'data-path': s.path }, [el('td', { text: '#' + (s.path || s.index) }), el('td', {}, [el('code', { text: s.type || '' })]),
          el('td', {}, [(s.calls || []).length ? el('ul', {}, s.calls.map(callItem)) : el('span', { className: 'muted', text: 'none' })]),
          el('td', {}, [s.pauses ? el('div', { className: 'pauses', text: 'waits for a person' }) : null,
            from(s.from_element) ? el('div', { className: 'from-element', text: 'goes on at element ' + s.from_element }) : null])])))]) : json(plan),
      el('h4', { id: 'h-retry-webhooks', text: 'Webhooks its events are delivered to' }),
      hooks.length ? el('ul', { id: 'retry-webhooks', 'aria-labelledby': 'h-retry-webhooks' }, hooks.map(hookItem)) : el('p', { id: 'retry-webhooks', className: 'muted', text: 'None: no webhook takes its events.' }),
      el('label', { for: 'retry-reason', text: 'Why retry? (recorded in the new run\u2019s evidence)' }), reason,
      el('div', { className: 'row' }, [el('button', { type: 'submit', className: 'btn', text: 'Retry' }),
        el('button', { type: 'button', className: 'btn secondary', text: 'Back', onclick: () => d.close() })]), out]);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!reason.value.trim()) { out.className = 'msg bad'; out.textContent = 'Say why: the reason is kept with the run.'; reason.focus(); return; }
      try {
        const r = await ctx.rt('POST', base + '/retry', { reason: reason.value.trim() });
        const next = r && (r.id || r.run_id);
        if (next && next !== id) {
          const link = el('a', { href: '/console/runs/' + encodeURIComponent(next), text: next });
          done(el('div', { className: 'msg good', role: 'status' }, ['Retried as ', link, '.']));
          d.close(link);
        } else {
          d.close(done(msg('good', 'Retried.')));
        }
        last = '';
        await load();
      } catch (e) { out.className = 'msg bad'; out.textContent = problem(e); }
    });
    actionBox.replaceChildren();
    d = openDialog(actionBox, { id: 'retry-dialog', title: 'What the retry does again', body: form, first: 'title', describedBy: 'retry-summary', returnTo: opener('Retry from the failed step…') });
  }

  function drawTask(st, holder) {
    const key = pending.approval ? 'a:' + pending.approval.approval_id : pending.form ? 'f:' + pending.form.form_pause_id : '';
    if (key === taskKey) return; // the same task: what is typed stays
    taskKey = key;
    if (key) decided = false;
    if (pending.approval) {
      const a = pending.approval;
      const note = el('input', { id: 'decide-comment', type: 'text', size: 40 });
      const out = msg('', '');
      async function decide(ok) {
        try {
          await ctx.rt('POST', '/approvals/' + encodeURIComponent(id) + '/' + a.step_id, { approved: ok, comment: note.value });
          // The buttons are gone: focus goes to the answer (read out as it is focused).
          const said = el('div', { className: 'msg good', role: 'status', tabindex: '-1', text: ok ? 'Approved.' : 'Rejected.' });
          task.replaceChildren(el('div', { className: 'card' }, [said]));
          said.focus();
          decided = true; // the answer stays when the run moves on and the task is gone
          last = '';
        } catch (e) { out.className = 'msg bad'; out.textContent = problem(e); }
      }
      task.replaceChildren(el('div', { className: 'card task', 'data-kind': 'approval' }, [
        el('h3', { text: 'Approval for ' + a.approver_role }),
        a.comment ? el('p', { text: a.comment }) : null,
        a.request_payload && Object.keys(a.request_payload).length ? el('h4', { text: 'What is asked' }) : null,
        a.request_payload && Object.keys(a.request_payload).length ? json(a.request_payload, { className: 'json payload' }) : null,
        a.expires_at ? el('p', { className: 'muted', text: 'Open until ' + when(a.expires_at) }) : null,
        el('label', { for: 'decide-comment', text: 'Comment (optional)' }), note,
        el('div', { className: 'row' }, [el('button', { type: 'button', className: 'btn', text: 'Approve', onclick: () => decide(true) }),
          el('button', { type: 'button', className: 'btn secondary', text: 'Reject', onclick: () => decide(false) })]), out]));
      return;
    }
    if (pending.form) {
      task.replaceChildren(el('div', { className: 'card task', 'data-kind': 'form' }, [el('h3', { text: 'The form this run waits for' }),
        pending.form.expires_at ? el('p', { className: 'muted', text: 'Open until ' + when(pending.form.expires_at) }) : null,
        formElement(ctx, id, holder.index, pending.form, () => { last = ''; })]));
      return;
    }
    if (!decided) task.replaceChildren();
  }

  const open = new Set();
  let firstDraw = true;
  function drawSteps(st, ev) {
    for (const d of timeline.querySelectorAll('details[data-step]')) { if (d.open) open.add(d.dataset.step); else open.delete(d.dataset.step); }
    const focused = timeline.contains(document.activeElement) ? document.activeElement.closest('li[data-step]') : null;
    const focusStep = focused && focused.dataset.step;
    const steps = ev.steps || [];
    const shown = new Set(steps.map((s) => s.index));
    const began = {};
    for (const e of (lastEvents && lastEvents.items) || []) {
      const i = e.payload && e.payload.step_index;
      if (e.event === 'step.started' && i !== undefined && !began[i]) began[i] = e.timestamp;
    }
    const items = steps.map((s) => stepItem(ctx, id, st, s, pending, def, open.has(String(s.index)) || (s.status === 'failed' && firstDraw), began[s.index]));
    // Steps not reached yet: from the status document's list.
    for (const s of st.steps || []) {
      if (!shown.has(s.index)) items.push(el('li', { className: 'step s-pending', 'data-step': String(s.index), 'data-status': 'pending' }, [el('div', { className: 'step-head' }, [
        el('span', { className: 'step-n', text: '#' + s.index }), el('code', { className: 'step-type', text: s.type }), status('pending', 'not reached')])]));
    }
    timeline.replaceChildren(...items);
    firstDraw = false;
    if (focusStep) { const s = timeline.querySelector('li[data-step="' + focusStep + '"] summary'); if (s) s.focus(); }
  }

  function drawContext(st) {
    const keys = Object.keys(st.context || {}).filter((k) => k !== '__run_id' && k !== 'input');
    if (!keys.length) { context.replaceChildren(el('p', { className: 'muted', text: 'Nothing yet beyond the input.' })); return; }
    const opened = new Set([...context.querySelectorAll('details[open]')].map((d) => d.dataset.key));
    context.replaceChildren(...keys.map((k) => {
      const v = st.context[k];
      const d = el('details', { 'data-key': k, open: opened.has(k) }, [el('summary', {}, [el('code', { text: k }), truncated(v) ? el('span', { className: 'muted', text: ' — large: ' + (v.length !== undefined ? v.length + ' elements' : v.bytes + ' bytes') + ', paged' }) : null])]);
      let done = false;
      const fill = () => { if (!done && d.open) { done = true; d.appendChild(valueView(ctx, id, k, v)); } };
      d.addEventListener('toggle', fill);
      fill();
      return d;
    }));
  }

  function drawEvidence(ev) {
    const counts = Object.entries(ev.counts || {});
    const parts = [];
    parts.push(counts.length ? el('dl', { className: 'facts counts' }, counts.flatMap(([k, v]) => [el('dt', { text: k.replace(/_/g, ' ') }), el('dd', { text: String(v) })])) : el('p', { className: 'muted', text: 'No counts.' }));
    const dt = decisionsTable(ev.decisions);
    parts.push(el('h4', { text: 'Decisions' }), dt || el('p', { className: 'muted', text: 'None.' }));
    const et = effectsTable(ev.effects, true);
    parts.push(el('h4', { text: 'Effects' }), et || el('p', { className: 'muted', text: 'None.' }));
    const ex = ev.exceptions || [];
    parts.push(el('h4', { text: 'Exception rows written' }), ex.length ? exceptionsTable(ex) : el('p', { className: 'muted', text: 'None.' }));
    const all = (ev.counts && ev.counts.exceptions) || ex.length;
    if (all > ex.length) parts.push(el('p', { className: 'muted', text: 'The first ' + ex.length + ' of ' + all + ' exception rows; the exception table has them all.' }));
    evidence.replaceChildren(...parts);
  }

  function drawEvents(evs) {
    const items = evs.items || [];
    const opened = new Set([...events.querySelectorAll('details[open]')].map((d) => d.dataset.event));
    events.replaceChildren(items.length ? el('table', {}, [el('thead', {}, [el('tr', {}, ['When', 'Event', 'Payload'].map((h) => el('th', { scope: 'col', text: h })))]),
      el('tbody', {}, items.map((e, i) => el('tr', {}, [el('td', { text: when(e.timestamp) }), el('td', {}, [el('code', { text: e.event })]),
        el('td', {}, [el('details', { 'data-event': String(i), open: opened.has(String(i)) }, [el('summary', { text: 'Payload' }), json(e.payload)])])])))]) : el('p', { className: 'muted', text: 'No events yet.' }));
  }

  try { await load(); } catch (e) {
    if (e.status === 404) {
      facts.replaceChildren(msg('bad', 'No run ' + id + ' in the organization ' + ctx.org + '.'));
      return;
    }
    fail(facts, e);
    return;
  }
  ctx.every(1500, async () => { if (!ENDED.includes(lastStatus) || !last) await load(); });
}

// formElement is the SDK's form renderer (<svc-form>, the same fields, checks and errors as on
// a customer's page) submitting through the console: the account holder fills it in.
export function formElement(ctx, runId, stepId, pause, done, submitWith) {
  if (!window.SvcSDK || !window.SvcSDK.defineFormElements) return msg('bad', 'The form renderer (/sdk/v1.js) did not load.');
  window.SvcSDK.defineFormElements();
  const f = document.createElement('svc-form');
  f.sender = async (data) => {
    try {
      const d = submitWith ? await submitWith(data) : await ctx.rt('POST', '/forms/' + encodeURIComponent(runId) + '/' + stepId + '/submit', { data });
      if (done) setTimeout(done, 0);
      return { ok: true, status: 200, data: d || {} };
    } catch (e) { return { ok: false, status: e.status, data: e.body || { detail: e.message } }; }
  };
  f.setAttribute('done-text', 'Sent: the run goes on.');
  f.setAttribute('form-label', 'Form of run ' + runId + ', step ' + stepId);
  f.setAttribute('schema', JSON.stringify(pause.schema || { version: 'form_schema_v1', pages: [{ id: 'main', fields: (pause.expected_keys || []).map((k) => ({ key: k, type: 'text', label: k, required: true })) }] }));
  return f;
}
