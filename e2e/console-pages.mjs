// The console's workflows, tables, documents, webhooks, agents and forms pages, driven in
// Chromium (run.mjs calls consolePages): each page and action, what the service recorded
// after each action (through the runtime API, with the organization's runtime key), axe-core
// on every page, and screenshots. The data comes from hosts/svcflow/e2e_pages_test.go.
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkAxe } from './axe.mjs';

export async function consolePages({ step, shot, must, cfg }) {
  const seeded = cfg.pages;
  const axe = [];
  async function api(path, init) {
    const r = await fetch(cfg.gateway + path, Object.assign({ headers: { Authorization: 'Bearer ' + cfg.liveKey, 'Content-Type': 'application/json' } }, init || {}));
    const t = await r.text();
    return { status: r.status, body: t ? JSON.parse(t) : null };
  }
  // open signs in once on the page (the console keeps its token for the tab) and goes to path.
  async function open(page, path) {
    await page.goto(cfg.gateway + '/console' + path);
    const token = page.getByLabel('Token');
    if (await token.isVisible().catch(() => false)) {
      await token.fill(cfg.mgmt);
      await page.getByRole('button', { name: 'Sign in' }).click();
      // Signed in once the header offers to sign out (the token is kept by then): only
      // then may the page be loaded again, or it would ask for the token once more.
      await page.locator('#signout').waitFor({ state: 'visible' });
      await page.goto(cfg.gateway + '/console' + path);
    }
    await page.locator('#view h2, main h2').first().waitFor();
  }
  async function look(page, name) { axe.push(await checkAxe(page, name)); }
  const after0 = (r) => r.body.attempts;
  // canon is JSON with object keys sorted (the page sorts them).
  const canon = (v) => JSON.stringify(v, (k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
  // readme is a screenshot of what the window shows (not the whole page), for README.
  // It is copied to $SVC_E2E_DOCS_IMG/<name>.png when that is set (docs/console.md).
  async function readme(page, name) {
    const file = join(cfg.artifacts, 'readme-' + name + '.png');
    await page.screenshot({ path: file });
    if (process.env.SVC_E2E_DOCS_IMG) copyFileSync(file, join(process.env.SVC_E2E_DOCS_IMG, name + '.png'));
  }

  await step('consoleWorkflows', async (page) => {
    await open(page, '/workflows');
    const row = page.locator('tr').filter({ hasText: 'pay-suppliers' });
    await row.getByText('v2').waitFor(); // the list shows the version
    await look(page, 'workflows');
    await row.getByRole('link', { name: 'pay-suppliers' }).click();
    await page.waitForURL(/\/console\/workflows\/wfl-/);
    const flow = page.getByRole('list', { name: 'Steps of pay-suppliers' });
    await flow.waitFor();
    must(await flow.locator(':scope > li').count() === 2, 'two top-level steps');
    must(await flow.locator(':scope > li[data-kind=loop] li[data-kind=table]').count() === 1, 'the loop holds its table write');
    const pause = flow.locator(':scope > li[data-kind=pause]');
    must(/waits for an approval by finance/.test(await pause.innerText()), 'the pause says who it waits for');
    must(/only if\s+@input\.total greaterThan 5000/.test(await pause.innerText()), 'the filter reads as a sentence: ' + await pause.innerText());
    // Its JSON: the definition the service keeps, as it is.
    await page.getByText('Definition (JSON)').click();
    const shown = JSON.parse(await page.getByLabel('Definition of version 2').innerText());
    const kept = (await api('/workflows/' + seeded.workflow)).body;
    must(kept.version === 2 && canon(shown) === canon(kept.definition), 'the JSON shown is the definition kept');
    // The default comparison: the version before the current one, and the current one.
    const summary = page.locator('#diff-summary');
    must(/From v1 to v2: \d+ lines? added, \d+ removed/.test(await summary.innerText()), 'a diff summary: ' + await summary.innerText());
    must(await page.locator('.d-add').filter({ hasText: '5000' }).count() === 1 && await page.locator('.d-del').filter({ hasText: '1000' }).count() === 1,
      'the changed threshold is a removed and an added line');
    await look(page, 'workflow');
    await shot(page, 'console-workflow');
    await page.setViewportSize({ width: 1000, height: 760 });
    await readme(page, 'console-workflow');
    // The dark theme: axe checks its contrast too.
    await page.emulateMedia({ colorScheme: 'dark' });
    await look(page, 'workflow-dark');
    await shot(page, 'console-workflow-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    // The comparison is in the URL: a reload shows it again; the same version twice says so.
    await page.getByLabel('From').selectOption('2');
    await page.getByRole('button', { name: 'Compare' }).click();
    await page.waitForURL(/from=2&to=2/);
    await page.reload();
    await page.locator('#diff-summary').filter({ hasText: 'v2 and v2 have the same definition' }).waitFor();
    const v1 = await api('/workflows/' + seeded.workflow + '?version=1');
    must(v1.status === 200 && JSON.stringify(v1.body.definition).includes('1000'), 'the service kept version 1');
  });

  await step('consoleTables', async (page) => {
    await open(page, '/tables');
    await look(page, 'tables');
    await page.getByRole('link', { name: 'payments' }).click();
    const rows = page.locator('table tbody tr');
    await rows.first().waitFor();
    must(await rows.count() === 50, 'a first page of 50 rows, not ' + await rows.count());
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Rows of payments: 51–60').waitFor();
    must(await page.getByRole('button', { name: 'Next page' }).isDisabled(), 'the last page has no next');
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText('Rows of payments: 1–50, more after').waitFor();
    // Filtered on an indexed column; the filter is in the URL.
    await page.getByLabel('status (text)').fill('held');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/where=/);
    await page.getByText(/Rows of payments: 1–20$/).waitFor();
    const shown = await rows.count();
    const held = await api('/custom-tables/payments/rows?limit=500&where=' + encodeURIComponent('{"status":"held"}'));
    must(held.body.items.length === shown && shown === 20, `the page shows what the service holds: ${shown} of ${held.body.items.length}`);
    must(await rows.filter({ hasText: 'paid' }).count() === 0, 'only held rows');
    must(await page.getByLabel('amount (number)').count() === 0, 'only indexed columns filter');
    await look(page, 'table');
    await shot(page, 'console-table');
  });

  await step('consoleDocuments', async (page) => {
    await open(page, '/documents');
    const row = page.locator('tr').filter({ hasText: 'rates.csv' });
    await row.getByText('v2').waitFor(); // the latest version is listed
    await page.getByLabel('Tag').fill('payroll');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No document has this tag.').waitFor();
    await page.getByLabel('Tag').fill('finance');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/tag=finance/);
    await row.waitFor();
    await look(page, 'documents');
    await row.getByRole('link', { name: 'rates.csv' }).click();
    await page.locator('tr[data-version]').first().waitFor();
    must(await page.locator('tr[data-version]').count() === 2, 'both versions');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download v1 of rates.csv' }).click()]);
    const got = readFileSync(await dl.path(), 'utf8');
    must(got === 'currency,rate\nUSD,1.08\n', 'version 1 downloaded as uploaded: ' + JSON.stringify(got));
    must(dl.suggestedFilename() === 'rates.csv', 'saved under its name: ' + dl.suggestedFilename());
    await page.getByText('Version 1 of rates.csv downloaded.').waitFor();
    await look(page, 'document');
    await shot(page, 'console-document');
  });

  await step('consoleWebhooks', async (page) => {
    await open(page, '/webhooks');
    const hook = page.locator('tr').filter({ hasText: '/hook' });
    await hook.getByText('healthy').waitFor();
    await look(page, 'webhooks');
    await hook.getByRole('link').click();
    const first = page.locator('tr[data-delivery]').filter({ hasText: 'succeeded' }).first();
    await first.waitFor({ timeout: 10000 });
    const id = await first.getAttribute('data-delivery');
    const before = (await api('/deliveries/' + id)).body;
    must(before.attempt_list.length === 1, 'one attempt before: ' + before.attempt_list.length);
    const run = first.getByRole('link', { name: 'Run ' + before.run_id });
    must(await run.getAttribute('href') === '/console/runs/' + before.run_id, 'the delivery links to its run');
    const attempts = page.locator(`tr[data-delivery="${id}"] + tr.detail`);
    await first.getByRole('button', { name: 'Attempts of delivery ' + id }).click();
    await attempts.locator('tr[data-attempt="1"]').waitFor();
    await first.getByRole('button', { name: 'Redeliver ' + id }).click();
    await attempts.locator('tr[data-attempt="2"]').waitFor({ timeout: 15000 });
    await first.getByText(/Sent again: succeeded/).waitFor({ timeout: 15000 });
    must(await first.locator('td').nth(3).innerText() === String(after0(await api('/deliveries/' + id))), 'the row shows the attempts the service counts');
    const after = (await api('/deliveries/' + id)).body;
    must(after.attempt_list.length === 2 && after.status === 'succeeded', 'the service recorded a second attempt: ' + JSON.stringify(after.attempt_list));
    await look(page, 'webhook');
    await shot(page, 'console-webhook');
    await page.setViewportSize({ width: 1000, height: 640 });
    await readme(page, 'console-webhook');
  });

  await step('consoleAgents', async (page) => {
    await open(page, '/agents');
    const row = page.locator('tr').filter({ hasText: seeded.agent });
    await row.getByText('completed').waitFor();
    await look(page, 'agents');
    await page.getByLabel('Status').selectOption('failed');
    await page.waitForURL(/status=failed/);
    await page.getByText('No agent run failed.').waitFor();
    await page.goBack();
    await page.getByRole('link', { name: seeded.agent }).click();
    const it1 = page.locator('li[data-iteration="1"]');
    await it1.waitFor();
    must(/I need today's rates/.test(await it1.innerText()) && /rates/.test(await it1.locator('dd code').innerText()), 'iteration 1: its thought and action');
    must(/1\.08/.test(await it1.innerText()), 'iteration 1 observed the tool\u2019s answer');
    await page.getByText('EUR/USD is 1.08 today.').first().waitFor();
    const trace = (await api('/agents/' + seeded.agent + '/trace')).body.trace;
    must(await page.locator('li[data-iteration]').count() === trace.length, 'one box per recorded iteration: ' + trace.length);
    await look(page, 'agent');
    await shot(page, 'console-agent');
  });

  await step('consoleForms', async (page) => {
    await open(page, '/forms');
    await look(page, 'forms');
    await page.getByRole('link', { name: 'Contact us' }).click();
    const rows = page.locator('table tbody tr');
    await rows.first().waitFor();
    const subs = (await api('/external-forms/' + cfg.publicForm + '/submissions?limit=100')).body.items;
    must(await rows.count() === subs.length, `every submission: ${await rows.count()} of ${subs.length}`);
    const withRun = subs.find((s) => s.triggered_run_id);
    must(await page.getByRole('link', { name: 'Run ' + withRun.triggered_run_id }).getAttribute('href') === '/console/runs/' + withRun.triggered_run_id, 'a submission links to its run');
    must(await rows.filter({ hasText: 'ada@example.com' }).count() >= 1, 'the submitted values are shown');
    await look(page, 'form');
    await shot(page, 'console-form');
  });

  // The line diff and sorted JSON the comparison rests on, in the page's own module.
  await step('consoleDiff', async (page) => {
    await open(page, '/workflows');
    const got = await page.evaluate(async () => {
      const { lineDiff, pretty } = await import('/console/pagekit.js');
      const ops = (a, b, max) => lineDiff(a, b, max).map((o) => o.op + o.text).join('|');
      return {
        same: ops('a\nb', 'a\nb'),
        insertFirst: ops('b\nc', 'a\nb\nc'),
        replaceMiddle: ops('a\nx\nc', 'a\ny\nc'),
        moved: ops('a\nb\nc', 'c\na\nb'),
        tooBig: ops('a\nb\nc', 'a\nx\ny\nc', 1),
        sorted: pretty({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: null } }) === pretty({ a: { c: null, d: [2, { e: 0, f: 1 }] }, b: 1 }),
        order: pretty({ a: [1, 2] }) === pretty({ a: [2, 1] }),
      };
    });
    must(got.same === ' a| b', 'same: ' + got.same);
    must(got.insertFirst === '+a| b| c', 'insert first: ' + got.insertFirst);
    must(got.replaceMiddle === ' a|-x|+y| c', 'replace: ' + got.replaceMiddle);
    must(got.moved === '+c| a| b|-c', 'moved: ' + got.moved);
    must(got.tooBig === ' a|-b|+x|+y| c', 'past the cap, all removed then all added: ' + got.tooBig);
    must(got.sorted && !got.order, 'key order is no change, element order is');
  });

  // Keyboard only: from the nav to a workflow and its comparison, focus where it should be.
  await step('consoleKeyboard', async (page) => {
    await open(page, '/workflows');
    const link = page.getByRole('link', { name: 'pay-suppliers' });
    await link.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/console\/workflows\/wfl-/);
    await page.getByRole('list', { name: 'Steps of pay-suppliers' }).waitFor();
    must(await page.evaluate(() => document.activeElement && document.activeElement.tagName) === 'H2', 'focus moves to the new page\u2019s heading');
    await page.getByLabel('To').focus();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/from=1&to=2/);
  });

  return axe;
}

