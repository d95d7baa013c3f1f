// The console's runs, run page and tasks, driven in Chromium (run.mjs calls consoleRuns): each
// action, then what the service recorded after it (through the runtime API with the
// organization's runtime key), axe-core on every page, and screenshots (docs/img/console-*.png
// are taken from these when SVC_E2E_DOCS_IMG is set).
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkAxe } from './axe.mjs';

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
  const runStatus = async (id) => (await ok('GET', '/runs/' + id + '/status')).status;
  const workflow = async (name, def) => (await ok('POST', '/workflows', { name, definition: def })).id;
  const start = async (wf, input) => (await ok('POST', '/workflows/' + wf + '/execute', { input: input || {} })).id;
  // signIn opens a console URL (a deep link), signs in with the token, and lands there.
  async function signIn(page, path, token) {
    await page.goto(G + '/console' + path);
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
    await task.getByLabel('Comment (optional)').fill('ship it');
    await task.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#run-task').getByText('Approved.').waitFor();
    await page.locator('#run-status .status').filter({ hasText: 'completed' }).waitFor({ timeout: 10000 });
    const a = (await ok('GET', '/approvals?status=approved&limit=200')).items.find((x) => x.run_id === runId);
    must(a && a.decided_by.id === 'ops@platform.example' && a.decided_by.type === 'user', 'the approval is the account holder\u2019s: ' + JSON.stringify(a));
    await shot(page, 'console-done');
    return { runId };
  });

  // Runs: every run reachable, filters in the URL, search by run id and by business key,
  // live rows without losing the place.
  await step('consoleRuns', async (page) => {
    // Declared search keys where the service knows them (an older one refuses the field).
    let made0 = await api('POST', '/workflows', { name: 'invoice-check', definition: { search_keys: ['@input.invoice_id'], actions: [] } });
    if (made0.status === 422) made0 = await api('POST', '/workflows', { name: 'invoice-check', definition: { actions: [] } });
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
    const keyed = await api('GET', '/runs?key=INV-2013');
    if (keyed.status === 200 && keyed.body.items.length === 1) {
      await page.getByLabel('Run id or business key').fill('INV-2013');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(/q=INV-2013/);
      await until('the keyed run', async () => await rows.count() === 1 && await rows.first().getAttribute('data-run') === made[13]);
    }
    // The time range: runs started before the first of the 60 are not these.
    await page.goto(G + '/console/runs?workflow=invoice-check&to=2000-01-01T00:00');
    await page.locator('#runs-summary').getByText('No run matches').waitFor();
    return { keySearch: keyed.status === 200 && keyed.body.items.length === 1 };
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
    const plan = await api('GET', '/runs/' + failed + '/retry-plan');
    let retried = null;
    if (plan.status === 200) {
      await page.getByRole('button', { name: 'Retry from the failed step…' }).click();
      await page.locator('#retry-plan, #run-action pre').first().waitFor();
      await page.getByLabel(/Why retry/).fill('the receiver is back');
      await shot(page, 'console-retry-plan');
      await page.getByRole('button', { name: 'Retry', exact: true }).click();
      await page.locator('#run-action .msg.good').waitFor();
      const link = page.locator('#run-action .msg.good a');
      const next = (await link.count()) ? decodeURIComponent((await link.getAttribute('href')).split('/').pop()) : failed;
      const ev = await ok('GET', '/runs/' + next + '/evidence');
      retried = JSON.stringify(ev).includes('the receiver is back');
      must(retried, 'the retry\u2019s reason is in the evidence of ' + next);
    }

    // Cancel a paused run, with the reason recorded.
    const paused = await start(cfg.pauseWorkflow);
    await until('paused', async () => (await runStatus(paused)) === 'paused');
    await page.goto(G + '/console/runs/' + paused);
    await page.locator('#steps .status').filter({ hasText: 'waiting for a form' }).waitFor();
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await page.getByLabel(/Why cancel/).fill('sent twice');
    await page.getByRole('button', { name: 'Cancel the run' }).click();
    await page.locator('#run-status .status').filter({ hasText: 'cancelled' }).waitFor();
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
    await shot(page, 'console-run-paged');
    const paged = true;
    return { retried, paged };
  });

  // Many runs at once: cancel every run that matches a filter, after seeing how many.
  await step('consoleBulk', async (page) => {
    const hold = await workflow('hold-for-answer', { actions: [{ type: 'PbotForm', properties: { expected_keys: ['answer'] } }] });
    const ids = [];
    for (let i = 0; i < 7; i++) ids.push(await start(hold));
    await until('7 paused', async () => (await ok('GET', '/runs?workflow_id=' + hold + '&status=paused&limit=100')).items.length === 7);
    await signIn(page, '/runs?workflow=hold-for-answer&status=paused');
    await page.locator('#runs tbody tr').first().waitFor();
    await page.locator('#bulk summary').click();
    await page.getByRole('button', { name: 'Cancel matching runs…' }).click();
    await page.locator('#bulk-count').getByText('This will cancel 7 runs').waitFor();
    await page.getByLabel('Reason (recorded with each run)').fill('a bad batch');
    await page.getByRole('button', { name: 'Cancel 7 runs' }).click();
    await page.locator('#bulk [data-op]').filter({ hasText: '7 of 7 cancelled' }).waitFor({ timeout: 15000 });
    await page.locator('#runs-summary').getByText('No run matches').waitFor();
    await look(page, 'runs-bulk');
    await shot(page, 'console-bulk');
    for (const id of ids) {
      must(await runStatus(id) === 'cancelled', id + ' cancelled');
      const c = (await ok('GET', '/runs/' + id + '/events')).items.find((e) => e.event === 'workflow_run_cancelled');
      must(c.payload.reason === 'a bad batch', 'its reason');
    }
    // The outcome is kept: a reload lists it.
    await page.goto(G + '/console/runs?workflow=hold-for-answer');
    await page.locator('#runs tbody tr[data-run="' + ids[0] + '"] .status').filter({ hasText: 'cancelled' }).waitFor();
    if (await page.locator('#bulk').getAttribute('open') === null) await page.locator('#bulk summary').click();
    await page.locator('#bulk [data-op]').filter({ hasText: '7 of 7 cancelled' }).waitFor();
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
    await signIn(page, '/tasks');
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
