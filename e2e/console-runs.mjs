// The console's runs, run page and tasks, driven in Chromium (run.mjs calls consoleRuns): each
// action, then what the service recorded after it (through the runtime API with the
// organization's runtime key), axe-core on every page, and screenshots (docs/img/console-*.png
// are taken from these when SVC_E2E_DOCS_IMG is set).
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkAxe } from './axe.mjs';
import { tabTo, focused, focusIn, trapped } from './keys.mjs';

export async function consoleRuns({ step, shot, must, cfg }) {
  const axe = [];
  const G = cfg.gateway;
  async function api(method, path, body, bearer) {
    const r = await fetch(G + path, { method, headers: { Authorization: 'Bearer ' + (bearer || cfg.liveKey), 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const t = await r.text();
    let b = null;
    try { b = t ? JSON.parse(t) : null; } catch (e) { b = t; }
    return { status: r.status, body: b };
  }
  async function ok(method, path, body, bearer) {
    const r = await api(method, path, body, bearer);
    must(r.status < 300, method + ' ' + path + ': ' + r.status + ' ' + JSON.stringify(r.body));
    return r.body;
  }
  async function until(what, fn, ms) {
    const end = Date.now() + (ms || 15000);
    for (;;) {
      const v = await fn();
      if (v) return v;
      if (Date.now() > end) throw new Error('never: ' + what);
      await new Promise((res) => setTimeout(res, 100));
    }
  }
  const ENDS = ['completed', 'failed', 'cancelled', 'rejected', 'condition_not_met'];
  const runStatus = async (id) => (await ok('GET', '/runs/' + id + '/status')).status;
  const workflow = async (name, def) => (await ok('POST', '/workflows', { name, definition: def })).id;
  const start = async (wf, input) => (await ok('POST', '/workflows/' + wf + '/execute', { input: input || {} })).id;
  // signIn opens a console URL (a deep link), signs in with the token, and lands there.
  async function signIn(page, path, token, axeName) {
    await page.goto(G + '/console' + path);
    if (axeName) { await page.getByLabel('Token').waitFor(); await look(page, axeName); }
    await page.getByLabel('Token').fill(token || cfg.mgmt);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('main h2').first().waitFor();
    must(new URL(page.url()).pathname === '/console' + path.split('?')[0], 'the deep link is kept through sign-in: ' + page.url());
  }
  async function look(page, name) { axe.push(await checkAxe(page, name)); }
  // docsShot is a screenshot of the window (not the whole page) for the documentation:
  // e2e/artifacts/docs-<name>.png, copied to $SVC_E2E_DOCS_IMG/<name>.png when it is set.
  async function docsShot(page, name) {
    const file = join(cfg.artifacts, 'docs-' + name + '.png');
    await page.screenshot({ path: file });
    if (process.env.SVC_E2E_DOCS_IMG) copyFileSync(file, join(process.env.SVC_E2E_DOCS_IMG, name + '.png'));
  }

  // The console: a run watched at its own URL while it runs (its steps change without a
  // reload), then decided where it waits, by the account holder.
  await step('console', async (page) => {
    const runId = await start(cfg.slowWorkflow);
    await signIn(page, '/runs/' + runId);
    const step0 = page.locator('#steps li[data-step="0"]');
    await page.locator('#run-status .status').filter({ hasText: 'running' }).waitFor({ timeout: 10000 });
    must(await step0.getAttribute('data-status') !== 'completed', 'step 0 is not done while its call is in flight');
    await shot(page, 'console-running');
    await page.locator('#steps li[data-step="0"][data-status="completed"]').waitFor({ timeout: 15000 });
    // A step waiting for a person does not read "processing": it says what it waits for.
    const waits = page.locator('#steps li[data-step="1"] .status');
    await waits.filter({ hasText: 'waiting for approval by ops' }).waitFor({ timeout: 10000 });
    must(!/processing/.test(await page.locator('#steps').innerText()), 'no step reads processing');
    await page.locator('#run-status').getByText('waiting for approval by ops').waitFor();
    await page.locator('#events').getByText('pbot_approval_requested').waitFor({ timeout: 10000 });
    const task = page.locator('#run-task [data-kind=approval]');
    await task.getByText('Release it?').waitFor();
    await look(page, 'run-paused');
    await shot(page, 'console-paused');
    await docsShot(page, 'console-paused');
    // Keyboard only from here. A panel opened (Enter on its summary) stays open through the
    // live updates that follow the decision; the approval is reached back with Shift+Tab.
    await tabTo(page, 'Input, output and evidence');
    must(await focusIn(page, '#steps li[data-step="0"]'), 'the first panel reached is step 0\u2019s');
    await page.keyboard.press('Enter');
    await page.locator('#steps details[data-step="0"][open]').waitFor();
    await tabTo(page, 'Comment (optional)', { back: true });
    await page.keyboard.type('ship it');
    await tabTo(page, 'Approve');
    await page.keyboard.press('Space');
    await page.locator('#run-task').getByText('Approved.').waitFor();
    must(await page.evaluate(() => document.activeElement.textContent) === 'Approved.', 'the focus goes to the answer, not the page\u2019s top');
    await page.locator('#run-status .status').filter({ hasText: 'completed' }).waitFor({ timeout: 10000 });
    await page.locator('#steps li[data-step="1"][data-status="completed"]').waitFor();
    must(await page.locator('#steps details[data-step="0"]').getAttribute('open') !== null, 'the panel opened before the updates is still open');
    const a = (await ok('GET', '/approvals?status=approved&limit=200')).items.find((x) => x.run_id === runId);
    must(a && a.decided_by.id === 'ops@platform.example' && a.decided_by.type === 'user', 'the approval is the account holder\u2019s: ' + JSON.stringify(a));
    must(a.decision_comment === 'ship it', 'the comment typed: ' + JSON.stringify(a));
    await shot(page, 'console-done');
    return { runId };
  });

  // Runs: every run reachable, filters in the URL, search by run id and by business key,
  // live rows without losing the place.
  await step('consoleRuns', async (page) => {
    // Declared search keys where the service knows them (an older one refuses the field).
    const made0 = await api('POST', '/workflows', { name: 'invoice-check', definition: { search_keys: ['@input.invoice_id'], actions: [] } });
    must(made0.status === 201, 'the workflow: ' + JSON.stringify(made0.body));
    const wf = made0.body.id;
    const made = [];
    for (let i = 0; i < 60; i++) made.push(await start(wf, { invoice_id: 'INV-' + (2000 + i) }));
    await until('60 runs completed', async () => (await ok('GET', '/runs?workflow_id=' + wf + '&status=completed&limit=100')).items.length === 60);
    await signIn(page, '/runs?workflow=invoice-check');
    const rows = page.locator('#runs tbody tr');
    await rows.first().waitFor();
    must(await rows.count() === 50, 'the first page holds 50 rows: ' + await rows.count());
    must(await page.locator('#runs tbody tr').first().getAttribute('data-run') === made[59], 'newest first');
    must(/invoice-check v1/.test(await rows.first().innerText()), 'the workflow by name and version');
    must(JSON.stringify(await page.locator('#runs thead th').allInnerTexts()) === JSON.stringify(['Run', 'Workflow', 'Status', 'Started', 'Ended', 'Duration']), 'the columns');
    // A completed run's row: its status, start, end and duration as the service has them.
    const st0 = await ok('GET', '/runs/' + made[59] + '/status');
    const cells = await rows.first().locator('td').allInnerTexts();
    must(cells[2] === 'completed' && cells[3] && cells[4] && /\d\s*(ms|s)$/.test(cells[5]) && st0.status === 'completed', 'status, started, ended and duration: ' + JSON.stringify(cells));
    await page.getByRole('button', { name: 'Load more' }).click();
    await until('60 rows', async () => await rows.count() === 60);
    must(await page.getByRole('button', { name: 'Load more' }).isHidden(), 'no more page after the last');
    must(await rows.last().getAttribute('data-run') === made[0], 'the oldest run is reachable');
    // Live: a new run appears on top; the pages loaded and the focus stay.
    await rows.nth(55).locator('a').focus();
    const fresh = await start(wf, { invoice_id: 'INV-LIVE' });
    await page.locator('#runs tbody tr[data-run="' + fresh + '"]').waitFor({ timeout: 10000 });
    must(await rows.count() === 61, 'the loaded pages stay: ' + await rows.count());
    must(await rows.first().getAttribute('data-run') === fresh, 'the new run is on top');
    must(await page.evaluate(() => document.activeElement.closest('tr') && document.activeElement.closest('tr').rowIndex) === 57, 'the focus stays on its row');
    await look(page, 'runs');
    await shot(page, 'console-runs');
    // A status filter goes in the URL; a reload keeps it.
    await page.getByLabel('Status').selectOption('failed');
    await page.waitForURL(/status=failed/);
    must(/workflow=invoice-check/.test(page.url()), 'the filters add up: ' + page.url());
    await page.locator('#runs-summary').getByText('No run matches').waitFor();
    await page.reload();
    await page.locator('#runs-summary').getByText('No run matches').waitFor();
    must(await page.getByLabel('Status').inputValue() === 'failed', 'the reloaded page keeps the filter');
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.waitForURL((u) => u.search === '');
    // Search by run id: that run alone.
    await page.getByLabel('Run id or business key').fill(made[7]);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=run-/);
    await until('one row', async () => await rows.count() === 1 && await rows.first().getAttribute('data-run') === made[7]);
    // Search by business key: the runs whose declared key has the value.
    const keyed = await ok('GET', '/runs?key=INV-2013');
    must(keyed.items.length === 1 && keyed.items[0].id === made[13], 'the service finds the run by its key: ' + JSON.stringify(keyed.items));
    await page.getByLabel('Run id or business key').fill('INV-2013');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=INV-2013/);
    await until('the keyed run', async () => await rows.count() === 1 && await rows.first().getAttribute('data-run') === made[13]);
    // The time range: runs started before the first of the 60 are not these, nor after now;
    // a range around them holds the 61.
    await page.goto(G + '/console/runs?workflow=invoice-check&to=2000-01-01T00:00');
    await page.locator('#runs-summary').getByText('No run matches').waitFor();
    await page.goto(G + '/console/runs?workflow=invoice-check&from=2000-01-01T00:00&to=2999-01-01T00:00');
    await rows.first().waitFor();
    await page.getByRole('button', { name: 'Load more' }).click();
    await until('61 rows in the range', async () => await rows.count() === 61);
    // An empty range is said by the fields' names; after now, none.
    await page.getByLabel('Started after').fill('2999-01-01T00:00');
    await page.waitForURL(/from=2999/);
    await page.locator('#runs-summary').getByText('\u201cStarted before\u201d must be later than \u201cStarted after\u201d.').waitFor();
    must(await page.getByLabel('Started before').getAttribute('aria-invalid') === 'true', 'the field is marked invalid');
    await page.getByLabel('Started before').fill('');
    await page.waitForURL((u) => !/to=/.test(u.search));
    await page.locator('#runs-summary').getByText('No run matches').waitFor();
    return { keySearch: true };
  });

  // A run's page: a failed step's error with its code and attempts; cancel with a reason; a
  // form filled in with the SDK's renderer; a large value paged; retry when the service can.
  await step('consoleRun', async (page) => {
    await ok('POST', '/actions', { action_name: 'refused-call', kind: 'http', http_method: 'GET', url: 'http://127.0.0.1:1/nowhere' });
    const failing = await workflow('calls-nowhere', { actions: [{ type: 'refused-call', properties: {} }] });
    const failed = await start(failing);
    await until('failed', async () => (await runStatus(failed)) === 'failed', 30000);
    await signIn(page, '/runs/' + failed);
    const s0 = page.locator('#steps li[data-step="0"]');
    await s0.locator('.err-code').filter({ hasText: 'connection_failed' }).waitFor();
    must(/attempts?/.test(await s0.locator('.step-head').innerText()), 'the attempts are shown');
    await look(page, 'run-failed');
    await shot(page, 'console-run-failed');
    await docsShot(page, 'console-run-failed');
    // Retry, after the plan: a run that wrote a row, failed at its outside call, and would
    // wait for a person after it. The dialog says what is reused and what runs again.
    await ok('POST', '/custom-tables', { name: 'retry_rows', fields: { n: 'number' } });
    const again = await workflow('write-then-call', { actions: [
      { type: 'custom-table', properties: { table: 'retry_rows', operation: 'write', data: { n: 1 } } },
      { type: 'refused-call', properties: {} },
      { type: 'PbotForm', properties: { expected_keys: ['answer'] } }] });
    const broken = await start(again);
    await until('failed', async () => (await runStatus(broken)) === 'failed', 30000);
    // A registration of the retry's own event, disabled: the plan lists it, marked.
    const site = new URL(cfg.embed).origin;
    const off = await ok('POST', '/webhooks', { event: 'workflow_run_retried', url: site + '/retried-events' });
    await ok('PATCH', '/webhooks/' + off.id, { disabled: true });
    const plan = await ok('GET', '/runs/' + broken + '/retry-plan');
    must(plan.webhooks.some((w) => /: workflow_run_completed$/.test(w.detail)) && plan.webhooks.some((w) => w.detail.includes(off.id) && /disabled/.test(w.detail)),
      'the retry reaches the registered webhooks: ' + JSON.stringify(plan.webhooks));
    await page.goto(G + '/console/runs/' + broken);
    await page.locator('#steps li[data-step="1"][data-status="failed"]').waitFor();
    // Keyboard only: Tab to the button, Enter; the focus is in the dialog.
    await tabTo(page, 'Retry from the failed step…');
    await page.keyboard.press('Enter');
    await page.locator('#retry-dialog #retry-plan').waitFor();
    must(await focusIn(page, '#retry-dialog'), 'the focus moves into the dialog: ' + JSON.stringify(await focused(page)));
    must(await page.locator('#retry-dialog').evaluate((d) => d.open && d.matches(':modal')), 'the dialog is modal');
    const summary = await page.locator('#retry-summary').innerText();
    must(/starts at step #1/.test(summary) && /Reused, not run again: step #0/.test(summary), 'the plan\u2019s start and reused steps: ' + summary + ' / ' + JSON.stringify(plan));
    const callRow = await page.locator('#retry-plan tr[data-path="1"]').innerText();
    must(/http/.test(callRow) && /GET 127\.0\.0\.1:1/.test(callRow), 'the outside call, its method and host: ' + callRow);
    must(/waits for a person/.test(await page.locator('#retry-plan tr[data-path="2"]').innerText()), 'the pause after it is said');
    // The webhooks its events reach, one line each as the plan has them, the disabled one marked.
    const hookLines = page.locator('#retry-webhooks li');
    must(await hookLines.count() === plan.webhooks.length, 'one line per webhook: ' + await hookLines.count() + ' of ' + plan.webhooks.length);
    for (let i = 0; i < plan.webhooks.length; i++) {
      const w = plan.webhooks[i];
      const line = await hookLines.nth(i).innerText();
      must(line.includes(w.host) && line.includes(w.detail) && /POST/.test(line), 'the webhook line: ' + line + ' / ' + JSON.stringify(w));
      must((await hookLines.nth(i).getAttribute('data-disabled') === 'true') === /disabled/.test(w.detail), 'disabled marked as the plan says: ' + line);
    }
    must(summary.includes(plan.calls.webhook + ' webhook'), 'the total counts the webhooks: ' + summary);
    // Tab and Shift+Tab go round the dialog; Escape closes it and gives the focus back.
    await trapped(page, '#retry-dialog');
    await page.keyboard.press('Escape');
    await page.locator('#retry-dialog').waitFor({ state: 'detached' });
    must((await focused(page)).name === 'Retry from the failed step…', 'Escape gives the focus back to the button: ' + JSON.stringify(await focused(page)));
    await page.keyboard.press('Space');
    await page.locator('#retry-dialog #retry-plan').waitFor();
    await tabTo(page, /^Why retry/, { within: '#retry-dialog' });
    await page.keyboard.type('the receiver is back');
    await look(page, 'run-retry-plan');
    await shot(page, 'console-retry-plan');
    await docsShot(page, 'console-retry-plan');
    await tabTo(page, 'Retry', { within: '#retry-dialog' });
    await page.keyboard.press('Enter');
    await page.locator('#run-action .msg.good a').waitFor();
    await page.locator('#retry-dialog').waitFor({ state: 'detached' });
    must(/^run-/.test((await focused(page)).name), 'the focus goes to the new run\u2019s link: ' + JSON.stringify(await focused(page)));
    const next = decodeURIComponent((await page.locator('#run-action .msg.good a').getAttribute('href')).split('/').pop());
    const ev = await ok('GET', '/runs/' + next + '/evidence');
    must(ev.retry && ev.retry.retry_of === broken && ev.retry.reason === 'the receiver is back' && ev.retry.actor.id === 'ops@platform.example', 'the retry, its reason and actor in the new run\u2019s evidence: ' + JSON.stringify(ev.retry));
    await until('the retry ends', async () => ENDS.includes(await runStatus(next)), 30000);
    const rows = (await ok('GET', '/custom-tables/retry_rows/rows?limit=10')).items;
    must(rows.length === 1, 'the step before the failed one is not run again: ' + rows.length + ' rows');
    const retried = true;

    // Cancel a paused run, with the reason recorded.
    const paused = await start(cfg.pauseWorkflow);
    await until('paused', async () => (await runStatus(paused)) === 'paused');
    await page.goto(G + '/console/runs/' + paused);
    await page.locator('#steps .status').filter({ hasText: 'waiting for a form' }).waitFor();
    // Keyboard only: Enter opens the dialog on its reason, Escape closes it (the focus back
    // on the button), Space opens it again, the reason typed, Enter sends it.
    await tabTo(page, 'Cancel run…');
    await page.keyboard.press('Enter');
    await page.locator('#cancel-dialog').waitFor();
    must((await focused(page)).name === 'Why cancel this run? (recorded with it)', 'the focus is on the reason: ' + JSON.stringify(await focused(page)));
    await trapped(page, '#cancel-dialog');
    await page.keyboard.press('Escape');
    await page.locator('#cancel-dialog').waitFor({ state: 'detached' });
    must((await focused(page)).name === 'Cancel run…', 'Escape gives the focus back to the button: ' + JSON.stringify(await focused(page)));
    must(await runStatus(paused) === 'paused', 'Escape cancels nothing');
    await page.keyboard.press('Space');
    await page.locator('#cancel-dialog').waitFor();
    await page.keyboard.type('sent twice');
    await look(page, 'run-cancel');
    await shot(page, 'console-cancel');
    await page.keyboard.press('Enter');
    await page.locator('#run-status .status').filter({ hasText: 'cancelled' }).waitFor();
    must(await page.evaluate(() => document.activeElement.textContent) === 'Cancelled.', 'the focus goes to the outcome');
    const evs = (await ok('GET', '/runs/' + paused + '/events')).items;
    const c = evs.find((e) => e.event === 'workflow_run_cancelled');
    must(c && c.payload.reason === 'sent twice' && c.payload.actor.id === 'ops@platform.example', 'the cancel and its reason: ' + JSON.stringify(c));

    // Fill in a form pause in place (the SDK's renderer: an empty submit is refused first).
    const form = await start(cfg.pauseWorkflow);
    await until('paused', async () => (await runStatus(form)) === 'paused');
    await page.goto(G + '/console/runs/' + form);
    const f = page.locator('#run-task svc-form');
    await f.locator('form').waitFor();
    await look(page, 'run-form');
    await f.getByRole('button', { name: 'Submit' }).click();
    await f.locator('.svc-error').filter({ hasText: 'Required.' }).waitFor();
    await f.getByLabel(/answer/i).fill('forty-two');
    await f.getByRole('button', { name: 'Submit' }).click();
    await page.locator('#run-task').getByText('Sent: the run goes on.').waitFor();
    await page.locator('#run-status .status').filter({ hasText: 'completed' }).waitFor({ timeout: 10000 });
    const fp = await ok('GET', '/forms/' + form + '/0');
    must(fp.status === 'submitted' && fp.claimed_by === 'ops@platform.example', 'the form was submitted by the account holder: ' + JSON.stringify(fp));
    must((await ok('GET', '/runs/' + form + '/context/answer')).value === 'forty-two', 'the answer is in the run');

    // A loop's elements are paged, never loaded whole.
    await ok('POST', '/custom-tables', { name: 'seen_rows', fields: { n: 'number' } });
    const big = await workflow('many-rows', { actions: [{ type: 'loop', properties: { mode: 'foreach', items: '@input.rows', result_key: 'written',
      steps: [{ type: 'custom-table', properties: { table: 'seen_rows', operation: 'write', data: { n: '@item.n' } } }] } }] });
    const bigRun = await start(big, { rows: Array.from({ length: 300 }, (_, i) => ({ n: i })) });
    await until('done', async () => (await runStatus(bigRun)) === 'completed', 20000);
    const reads = [];
    page.on('request', (r) => { if (/\/context\//.test(r.url())) reads.push(r.url()); });
    await page.goto(G + '/console/runs/' + bigRun);
    await page.locator('#steps li[data-step="0"] summary').click();
    const pager = page.locator('#steps li[data-step="0"] .pager');
    await pager.getByText('written: elements 1–20 of 300').waitFor();
    await pager.getByRole('button', { name: 'Next →' }).click();
    await pager.getByText('written: elements 21–40 of 300').waitFor();
    must(reads.length >= 2 && reads.every((u) => /limit=20/.test(u)), 'each read is a page: ' + reads);
    await pager.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(cfg.artifacts, 'console-run-paged.png') });
    // Its 300 writes: the effects 20 lines at first, 100 more on request, as many as recorded.
    const bigEv = await ok('GET', '/runs/' + bigRun + '/evidence');
    const writes = bigEv.steps[0].effects.length;
    must(writes >= 300, 'the service recorded each write: ' + writes);
    const effects = page.locator('#steps li[data-step="0"] table.effects tbody tr');
    must(await effects.count() === 20, 'the first 20 effects: ' + await effects.count());
    await page.locator('#steps li[data-step="0"]').getByText('Effects 1\u201320 of ' + writes + '.').waitFor();
    await page.locator('#steps li[data-step="0"]').getByRole('button', { name: 'Show 100 more effects' }).click();
    must(await effects.count() === 120, '100 more: ' + await effects.count());
    const paged = true;
    return { retried, paged };
  });

  // Many runs at once, done by the service (POST /run-operations): a dry run says how many
  // runs it touches, the progress is read from the operation, its outcome is kept by the
  // service and listed; after each action, the operation and each run as the service has them.
  await step('consoleBulk', async (page) => {
    const hold = await workflow('hold-for-answer', { actions: [{ type: 'PbotForm', properties: { expected_keys: ['answer'] } }] });
    const ids = [];
    for (let i = 0; i < 7; i++) ids.push(await start(hold));
    await until('7 paused', async () => (await ok('GET', '/runs?workflow_id=' + hold + '&status=paused&limit=100')).items.length === 7);
    // A run of the workflow that ended already is listed but not touched: cancel takes the
    // list's filter with the statuses it can act on (running, paused).
    await ok('POST', '/runs/' + ids[6] + '/cancel', { reason: 'ended before' });
    const counted = [];
    page.on('request', (r) => { if (/\/run-operations$/.test(r.url()) && r.method() === 'POST') counted.push(JSON.parse(r.postData())); });
    await signIn(page, '/runs?workflow=hold-for-answer');
    await page.locator('#runs tbody tr[data-run="' + ids[6] + '"]').waitFor();
    // Keyboard only: Enter on the panel's summary, Tab to the action, Enter; Escape once.
    await tabTo(page, 'Act on every run that matches');
    await page.keyboard.press('Enter');
    await page.locator('#bulk[open]').waitFor();
    await tabTo(page, 'Cancel matching runs…');
    await page.keyboard.press('Enter');
    await page.locator('#bulk-count').getByText('This will cancel 6 runs').waitFor();
    must((await focused(page)).name === 'Reason (recorded with each run)', 'the focus is on the reason: ' + JSON.stringify(await focused(page)));
    await trapped(page, '#bulk-dialog');
    await page.keyboard.press('Escape');
    await page.locator('#bulk-dialog').waitFor({ state: 'detached' });
    must((await focused(page)).name === 'Cancel matching runs…', 'Escape gives the focus back to the button: ' + JSON.stringify(await focused(page)));
    must(counted.length === 1, 'Escape starts nothing');
    await page.keyboard.press('Enter');
    await page.locator('#bulk-count').getByText('This will cancel 6 runs').waitFor();
    must(counted.length === 2 && counted.every((c) => c.dry_run === true), 'each count is a dry run: ' + JSON.stringify(counted));
    must(JSON.stringify(counted[0].filter) === JSON.stringify({ workflow_id: hold, status: ['running', 'paused'] }), 'the list\u2019s filter, as the operation\u2019s: ' + JSON.stringify(counted[0].filter));
    must((await ok('GET', '/run-operations?limit=100')).items.length === 0, 'a dry run keeps nothing');
    await look(page, 'runs-bulk-confirm');
    await page.keyboard.type('a bad batch');
    await tabTo(page, 'Cancel 6 runs', { within: '#bulk-dialog' });
    await page.keyboard.press('Enter');
    await page.locator('#bulk-progress').waitFor();
    must(await page.locator('#bulk-status').getAttribute('aria-live') === 'polite', 'the progress is announced');
    await page.locator('#bulk [data-op][data-status=completed]').filter({ hasText: '6 of 6 cancelled' }).waitFor({ timeout: 20000 });
    // The page is drawn again when it ended: the focus is on the operation's outcome.
    await page.waitForFunction(() => { const a = document.activeElement; return a && a.matches('#bulk [data-op]') && /6 of 6 cancelled/.test(a.textContent); }, null, { timeout: 10000 });
    await page.locator('#runs tbody tr[data-run="' + ids[0] + '"] .status').filter({ hasText: 'cancelled' }).waitFor();
    await look(page, 'runs-bulk');
    await shot(page, 'console-bulk');
    const ops = (await ok('GET', '/run-operations?limit=100')).items;
    must(ops.length === 1, 'one operation kept: ' + ops.length);
    const op = ops[0];
    must(op.action === 'cancel' && op.status === 'completed' && op.matched === 6 && op.done === 6 && op.skipped === 0 && op.failed === 0 &&
      op.reason === 'a bad batch' && op.actor.id === 'ops@platform.example', 'the operation as the service keeps it: ' + JSON.stringify(op));
    for (const id of ids.slice(0, 6)) {
      must(await runStatus(id) === 'cancelled', id + ' cancelled');
      const c = (await ok('GET', '/runs/' + id + '/events')).items.find((e) => e.event === 'workflow_run_cancelled');
      must(c.payload.reason === 'a bad batch', 'its reason: ' + JSON.stringify(c.payload));
    }
    const before = (await ok('GET', '/runs/' + ids[6] + '/events')).items.filter((e) => e.event === 'workflow_run_cancelled');
    must(before.length === 1 && before[0].payload.reason === 'ended before', 'the run that had ended is untouched');
    // The outcome is the service's: nothing in the browser's storage, and a reload lists it.
    must(await page.evaluate(() => Object.keys(localStorage).filter((k) => /operation/.test(k)).length) === 0, 'no operation kept in the browser');
    await page.reload();
    await page.locator('#runs tbody tr').first().waitFor();
    if (await page.locator('#bulk').getAttribute('open') === null) await page.locator('#bulk summary').click();
    const item = page.locator('#bulk [data-op="' + op.id + '"]');
    await item.filter({ hasText: '6 of 6 cancelled' }).waitFor();
    must(/a bad batch/.test(await item.innerText()) && /ops@platform\.example/.test(await item.innerText()) && /hold-for-answer/.test(await item.innerText()), 'the kept operation reads its filter, reason and actor: ' + await item.innerText());

    // Retry every failed run of a workflow; each new run says which it retries.
    await ok('POST', '/actions', { action_name: 'bulk-refused-call', kind: 'http', http_method: 'GET', url: 'http://127.0.0.1:1/nowhere' });
    const failing = await workflow('bulk-fails', { actions: [{ type: 'bulk-refused-call', properties: {} }] });
    const failed = [];
    for (let i = 0; i < 3; i++) failed.push(await start(failing));
    for (const id of failed) await until('failed', async () => (await runStatus(id)) === 'failed', 30000);
    await page.goto(G + '/console/runs?workflow=bulk-fails&status=failed');
    await page.locator('#runs tbody tr[data-run="' + failed[0] + '"]').waitFor();
    if (await page.locator('#bulk').getAttribute('open') === null) await page.locator('#bulk summary').click();
    await page.getByRole('button', { name: 'Retry matching failed runs…' }).click();
    await page.locator('#bulk-count').getByText('This will retry 3 runs').waitFor();
    await page.getByLabel('Reason (recorded with each run)').fill('the receiver is back');
    await page.getByRole('button', { name: 'Retry 3 runs' }).click();
    await page.locator('#bulk [data-op][data-status=completed]').filter({ hasText: '3 of 3 retried' }).waitFor({ timeout: 20000 });
    const rop = (await ok('GET', '/run-operations?limit=100')).items.find((o) => o.action === 'retry');
    must(rop && rop.matched === 3 && rop.done === 3 && rop.failed === 0 && JSON.stringify(rop.filter) === JSON.stringify({ workflow_id: failing, status: ['failed'] }), 'the retry operation: ' + JSON.stringify(rop));
    for (const id of failed) {
      const ev = await ok('GET', '/runs/' + id + '/evidence');
      must(ev.retried_by && ev.retried_by.retry_of === id && ev.retried_by.reason === 'the receiver is back', id + ' retried, with the reason: ' + JSON.stringify(ev.retried_by));
    }
    await page.locator('#bulk-progress').waitFor({ state: 'detached' });
    await shot(page, 'console-bulk-retry');
  });

  // A reconciliation's run page: the step's resolved input and its output, and the evidence
  // rendered (counts, decisions, effects, exception rows), each checked against what the
  // service recorded (the evidence document and the exception table's rows).
  await step('consoleEvidence', async (page) => {
    await ok('POST', '/custom-tables', { name: 'recon_exceptions', fields: { run_id: 'text', match_key: 'text', classification: 'text',
      missing_legs: 'text', discrepancy_fields: 'text', details: 'text', status: 'text', provenance: 'text' } });
    const wf = await workflow('month-end-e2e', { actions: [{ type: 'nway_match', properties: {
      sets: [{ key: 'bank', records: '@input.bank' }, { key: 'erp', records: '@input.erp' }],
      matchOn: ['invoice'], tolerances: { amount: { type: 'currency', value: 0.01 } }, exceptionTable: 'recon_exceptions' } }] });
    const run = await start(wf, {
      bank: [{ invoice: 'INV-1', amount: '100.00' }, { invoice: 'INV-2', amount: '50.00' }, { invoice: 'INV-3', amount: '20.00' }],
      erp: [{ invoice: 'INV-1', amount: '100.00' }, { invoice: 'INV-2', amount: '55.00' }, { invoice: 'INV-4', amount: '9.00' }] });
    await until('completed', async () => (await runStatus(run)) === 'completed', 30000);
    const ev = await ok('GET', '/runs/' + run + '/evidence');
    const table = (await ok('GET', '/custom-tables/recon_exceptions/rows?limit=100')).items.filter((r) => r.data.run_id === run);
    must(table.length === 3 && ev.exceptions.length === 3 && ev.counts.match_full === 1, 'the service: one full group, three exception rows: ' + JSON.stringify(ev.counts));
    await signIn(page, '/runs/' + run);
    const s0 = page.locator('#steps li[data-step="0"]');
    must(await s0.locator('.step-type').innerText() === 'nway_match', 'the step\u2019s type');
    must(/\d+(\.\d+)?\s*(ms|s)\b/.test(await s0.locator('.step-head').innerText()), 'the step\u2019s duration: ' + await s0.locator('.step-head').innerText());
    await s0.locator('summary').click();
    // The resolved input: the records, not the @input paths the definition names.
    const input = await s0.locator('h4:text-is("Input (resolved)") + pre').innerText();
    must(/INV-4/.test(input) && !/@input\.erp/.test(input) && JSON.stringify(JSON.parse(input)) === JSON.stringify(ev.steps[0].input_summary), 'the resolved input, as recorded: ' + input);
    const output = s0.locator('h4:text-is("Output") + *');
    must(/match_variance|variance/.test(await output.innerText()), 'the step\u2019s output: ' + await output.innerText());
    // Evidence: each count as the service has it, the exception rows one per table row.
    const counts = page.locator('#evidence dl.counts');
    for (const [k, v] of Object.entries(ev.counts)) {
      must(await counts.locator('dt', { hasText: new RegExp('^' + k.replace(/_/g, ' ') + '$') }).locator('+ dd').innerText() === String(v), 'the count ' + k);
    }
    const exRows = page.locator('#evidence table.exceptions tbody tr');
    must(await exRows.count() === table.length, 'one line per exception row written: ' + await exRows.count());
    for (const r of table) {
      const line = await page.locator('#evidence table.exceptions tr[data-key="' + r.data.match_key + '"]').innerText();
      must(line.includes(r.data.classification) && line.includes(r.data.status), 'the row of ' + r.data.match_key + ' reads its classification and status: ' + line);
    }
    must(await page.locator('#evidence table.effects tbody tr').count() === Math.min(20, ev.effects.length), 'the effects, one line each');
    must(await page.locator('#evidence table.decisions tbody tr').count() === ev.decisions.length || (ev.decisions.length === 0 && await page.locator('#evidence table.decisions').count() === 0), 'the decisions, one line each');
    await look(page, 'run-evidence');
    await shot(page, 'console-run-evidence');
    await page.locator('#h-evidence').evaluate((h) => h.scrollIntoView({ block: 'start' }));
    await docsShot(page, 'console-evidence');
  });

  // An agent step's reasoning on the run page: the organization's model (llmReply, a fake
  // OpenAI-compatible server) asks the rates tool, then answers; the run page shows each
  // iteration's thought, action and observation, as GET /agents/{id}/trace has them.
  await step('consoleAgentStep', async (page) => {
    const wf = await workflow('ask-the-rate', { actions: [{ type: 'loop', properties: { mode: 'react', objective: 'What is the EUR/USD rate today?',
      tools: [{ type: 'action', name: 'rates' }], max_iterations: 5, result_key: 'verdict' } }] });
    const run = await start(wf);
    await until('completed', async () => (await runStatus(run)) === 'completed', 30000);
    await signIn(page, '/runs/' + run);
    await page.locator('#steps li[data-step="0"] summary').click();
    const trace = page.locator('#steps li[data-step="0"] .trace');
    await trace.locator('li.iteration').nth(1).waitFor();
    const agentId = await trace.getAttribute('data-agent');
    const want = (await ok('GET', '/agents/' + agentId + '/trace')).trace;
    must(want.length === 2, 'the agent took two iterations: ' + JSON.stringify(want));
    const its = trace.locator('li.iteration');
    must(await its.count() === want.length, 'one item per iteration');
    const first = await its.nth(0).innerText();
    must(first.includes("I need today's rates: I will ask the rates tool.") && /rates/.test(first) && /1\.08/.test(first), 'iteration 1: thought, the rates action, its observation: ' + first);
    const second = await its.nth(1).innerText();
    must(second.includes('The tool says EUR/USD is 1.08: that answers the question.') && /__complete__|complete/.test(second), 'iteration 2: thought and the answer: ' + second);
    must((await ok('GET', '/runs/' + run + '/context/verdict')).value.answer === 'EUR/USD is 1.08 today.', 'the agent\u2019s answer is in the run');
    // The step's resolved input outlives its wait: the objective, as the evidence has it.
    const input = await page.locator('#steps li[data-step="0"] h4:text-is("Input (resolved)") + pre').innerText();
    const rec = (await ok('GET', '/runs/' + run + '/evidence')).steps[0].input_summary;
    must(/EUR\/USD rate today/.test(input) && JSON.stringify(JSON.parse(input)) === JSON.stringify(rec), 'the agent step\u2019s input: ' + input);
    await look(page, 'run-agent');
    await shot(page, 'console-run-agent');
  });

  // Tasks of a person signed in with an SDK session: the inbox refreshes, an approval shows
  // what it asks and goes away once decided, a form is filled in in place.
  await step('consoleTasks', async (page) => {
    await ok('PUT', '/gateway/orgs/acme/users/bo@example.com', { approver_roles: ['treasury'] }, cfg.mgmt);
    const pay = await workflow('pay-supplier', { actions: [{ type: 'PbotApproval', properties: { approver_role: 'treasury', comment: 'Pay this supplier?', request_payload: { supplier: '@input.supplier', amount: '@input.amount' } } }] });
    const first = await start(pay, { supplier: 'Acme Paper', amount: 1250 });
    await until('paused', async () => (await runStatus(first)) === 'paused');
    const pk = /publishableKey: "([^"]+)"/.exec(await (await fetch(cfg.embed)).text())[1];
    must((await api('POST', '/sdk/auth/start', { email: 'bo@example.com' }, pk)).status < 300, 'a code is mailed');
    let codeText = '';
    await until('the code', async () => { const r = await fetch(cfg.codeUrl + '?email=bo%40example.com&n=1'); if (r.ok) codeText = (await r.text()).trim(); return r.ok; });
    const session = (await ok('POST', '/sdk/auth/verify', { email: 'bo@example.com', code: codeText }, pk)).session_token;
    must(session, 'a session token');
    await signIn(page, '/tasks', session);
    const card = page.locator('li[data-kind=approval][data-run="' + first + '"]');
    await card.waitFor();
    must(/Acme Paper/.test(await card.locator('.payload').innerText()) && /1250/.test(await card.locator('.payload').innerText()), 'the request_payload is shown');
    await look(page, 'tasks-session');
    await shot(page, 'console-tasks');
    await docsShot(page, 'console-tasks');
    // A task that appears while the page is open comes in without a reload.
    const second = await start(pay, { supplier: 'Beta Ink', amount: 80 });
    const card2 = page.locator('li[data-kind=approval][data-run="' + second + '"]');
    await card2.waitFor({ timeout: 10000 });
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.waitFor({ state: 'detached', timeout: 10000 });
    await until('completed', async () => (await runStatus(first)) === 'completed');
    const a = (await ok('GET', '/approvals?status=approved&limit=200')).items.find((x) => x.run_id === first);
    must(a.decided_by.id === 'bo@example.com', 'decided by the signed-in person: ' + JSON.stringify(a.decided_by));
    // Decided elsewhere: the card goes away on the next refresh.
    await ok('POST', '/approvals/' + second + '/0', { approved: false, comment: 'not now' });
    await card2.waitFor({ state: 'detached', timeout: 10000 });
    // A form task, filled in in place.
    const formRun = await start(cfg.pauseWorkflow);
    const fcard = page.locator('li[data-kind=form][data-run="' + formRun + '"]');
    await fcard.locator('svc-form form').waitFor({ timeout: 10000 });
    await fcard.getByLabel(/answer/i).fill('from the inbox');
    await fcard.getByRole('button', { name: 'Submit' }).click();
    await fcard.waitFor({ state: 'detached', timeout: 10000 });
    const fp = await ok('GET', '/forms/' + formRun + '/0');
    must(fp.status === 'submitted' && fp.claimed_by === 'bo@example.com', 'the form was submitted by the person: ' + JSON.stringify(fp));
    must(await page.locator([first, second, formRun].map((r) => 'li[data-run="' + r + '"]').join(', ')).count() === 0, 'no card of these runs is left');
  });

  // The management token's task list, and keyboard only through the navigation.
  await step('consoleTasksMgmt', async (page) => {
    const run = await start(cfg.pauseWorkflow);
    await until('paused', async () => (await runStatus(run)) === 'paused');
    await signIn(page, '/tasks', null, 'sign-in');
    await page.locator('li[data-kind=form][data-run="' + run + '"] svc-form form').waitFor();
    await look(page, 'tasks');
    // The navigation is links: Runs by the keyboard, the heading focused on arrival.
    await page.getByRole('link', { name: 'Runs', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/runs$/);
    await page.waitForFunction(() => document.activeElement && document.activeElement.tagName === 'H2');
    must(await page.getByRole('link', { name: 'Runs', exact: true }).getAttribute('aria-current') === 'page', 'the current page is marked');
    await page.locator('#runs tbody tr').first().waitFor();
    await docsShot(page, 'console-runs');
    await page.goBack();
    await page.waitForURL(/\/console\/tasks$/);
    await page.locator('li[data-kind=form]').first().waitFor();
    await ok('POST', '/runs/' + run + '/cancel', { reason: 'e2e tidy' });
  });

  return axe;
}
