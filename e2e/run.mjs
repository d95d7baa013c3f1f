// Drives headless Chromium through the browser half of svcflow against a running
// `svcflow serve` that hosts/svcflow/e2e_test.go started and filled. Its configuration
// comes in SVC_E2E_CONFIG (JSON); it prints one JSON line of results and exits 1 when a
// step failed. Screenshots go to the artifacts folder.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { consolePages } from './console-pages.mjs';
import { sdkFixes } from './sdk-fixes.mjs';
import { consoleRuns } from './console-runs.mjs';

const cfg = JSON.parse(process.env.SVC_E2E_CONFIG || '{}');
mkdirSync(cfg.artifacts, { recursive: true });
const results = { steps: {}, failures: [] };

const browser = await chromium.launch({
  executablePath: cfg.chromium || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
    '--no-first-run', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
// The page must fetch nothing from another origin than the gateway and the test's page.
const foreign = [];
context.on('request', (r) => {
  const u = new URL(r.url());
  if (![new URL(cfg.gateway).host, new URL(cfg.embed).host].includes(u.host) && u.protocol !== 'data:') foreign.push(r.url());
});

async function step(name, fn) {
  // SVC_E2E_ONLY (a regular expression) runs only the steps it matches.
  if (process.env.SVC_E2E_ONLY && !new RegExp(process.env.SVC_E2E_ONLY).test(name)) return;
  const page = await context.newPage();
  const t0 = Date.now();
  try {
    const extra = await fn(page);
    results.steps[name] = Object.assign({ ok: true, ms: Date.now() - t0 }, extra || {});
  } catch (e) {
    results.steps[name] = { ok: false, error: String(e && e.message || e) };
    results.failures.push(name);
    await page.screenshot({ path: join(cfg.artifacts, name + '-failed.png'), fullPage: true }).catch(() => {});
  } finally {
    await page.close();
  }
}

function shot(page, name) { return page.screenshot({ path: join(cfg.artifacts, name + '.png'), fullPage: true }); }

const codesUsed = {};
async function code(email) {
  codesUsed[email] = (codesUsed[email] || 0) + 1;
  for (let i = 0; i < 100; i++) {
    const r = await fetch(cfg.codeUrl + '?email=' + encodeURIComponent(email) + '&n=' + codesUsed[email]);
    if (r.ok) return (await r.text()).trim();
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('no code mailed to ' + email);
}

function must(cond, msg) { if (!cond) throw new Error(msg); }

// 1. The hosted page of a public form, used with the keyboard only: an empty submit is
// refused with the error announced, a filled one starts the run.
await step('hosted', async (page) => {
  await page.goto(cfg.gateway + '/forms/' + cfg.publicForm);
  await page.waitForSelector('svc-form form');
  const rendered = await page.evaluate(() => performance.getEntriesByName('svc-form:rendered')[0].startTime);
  // Again, warm (the SDK from the cache, as every visitor after the first).
  await page.reload();
  await page.waitForSelector('svc-form form');
  const warm = await page.evaluate(() => performance.getEntriesByName('svc-form:rendered')[0].startTime);
  must(await page.locator('h1').innerText() === 'Contact us', 'the form name is the title');
  must(await page.getByText('Acme Ltd').count() === 1, 'the footer is shown');
  must(await page.getByText('Powered by svcflow').count() === 0, 'hidePoweredBy hides the line');
  await shot(page, 'hosted-light');
  // Keyboard only: Tab to the first field, Tab on to the button, Enter.
  await page.keyboard.press('Tab');
  must(await page.evaluate(() => document.activeElement && document.activeElement.getAttribute('name')) === 'email', 'Tab reaches the first field');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.waitForSelector('[aria-invalid=true]');
  const alert = await page.locator('svc-form [role=alert]').first().innerText();
  must(/field/.test(alert), 'the problem is announced: ' + alert);
  must(await page.evaluate(() => document.activeElement.getAttribute('name')) === 'email', 'focus goes to the field in error');
  await page.keyboard.type('ada@example.com');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Ada');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.getByText('Thanks!').waitFor();
  await shot(page, 'hosted-submitted');
  return { firstRenderMs: Math.round(rendered), warmRenderMs: Math.round(warm) };
});

// 2. The dark theme.
await step('dark', async (page) => {
  await page.goto(cfg.gateway + '/forms/' + cfg.publicForm + '?theme=dark');
  await page.waitForSelector('svc-form form');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  must(bg === 'rgb(20, 22, 26)', 'the body is dark: ' + bg);
  await shot(page, 'hosted-dark');
});

// 3. A form that requires sign-in: email, the mailed code, then the form.
await step('requireAuth', async (page) => {
  await page.goto(cfg.gateway + '/forms/' + cfg.authForm);
  await page.getByLabel('Email').fill('ann@example.com');
  await shot(page, 'signin');
  await page.getByRole('button', { name: 'Send me a code' }).click();
  await page.getByLabel('The 6-digit code we sent you').fill(await code('ann@example.com'));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Note').fill('signed in and sent');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.getByText('Thank you').waitFor();
  await shot(page, 'signin-submitted');
});

// 4. The 11th submit in a minute is refused, saying when to retry; nothing typed is lost.
await step('limit', async (page) => {
  await page.goto(cfg.gateway + '/forms/' + cfg.limitForm);
  await page.waitForSelector('svc-form form');
  const codes = await page.evaluate(async (id) => {
    const out = [];
    for (let i = 0; i < 10; i++) {
      const r = await fetch('/forms/public/' + id + '/submit', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ email: 'n' + i + '@example.com' }) });
      out.push(r.status);
    }
    return out;
  }, cfg.limitForm);
  must(codes.every((c) => c === 201), 'ten submits taken: ' + codes);
  await page.getByLabel('Email').fill('eleven@example.com');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.getByText(/Try again in \d+ s/).waitFor();
  must(await page.getByLabel('Email').inputValue() === 'eleven@example.com', 'what was typed stays');
  await shot(page, 'limit');
});

// 5. A page of another site embedding the SDK: <svc-form form-id public>, data-svc-form,
// the task sidebar (sign in, a new task appears, an approval decided), and a form pause
// resumed through <svc-form run-id step-id>.
await step('embed', async (page) => {
  await page.goto(cfg.embed);
  await page.waitForSelector('#public svc-form form');
  must(await page.locator('#data-attr svc-form form').count() === 1, 'data-svc-form renders a form');
  await page.locator('#public').getByLabel('Email').fill('embed@example.com');
  await page.locator('#public').getByRole('button', { name: 'Send it' }).click();
  await page.locator('#public').getByText('Received, thank you.').waitFor();

  const side = page.locator('svc-task-sidebar');
  await side.getByLabel('Email').fill('ann@example.com');
  await side.getByRole('button', { name: 'Send me a code' }).click();
  await side.getByLabel('The 6-digit code we sent you').fill(await code('ann@example.com'));
  await side.getByRole('button', { name: 'Sign in' }).click();
  await side.locator('li[data-kind=approval]').first().waitFor();
  await shot(page, 'sidebar');
  // A new run pauses at a form: the sidebar sees it and says so.
  const r = await fetch(cfg.gateway + '/workflows/' + cfg.pauseWorkflow + '/execute', { method: 'POST', headers: { Authorization: 'Bearer ' + cfg.liveKey, 'Content-Type': 'application/json' }, body: '{"input": {}}' });
  must(r.status === 202, 'a run started: ' + r.status);
  await page.waitForFunction(() => window.__events.some((e) => e.name === 'task:created' && e.detail.kind === 'form'), null, { timeout: 15000 });

  const approval = side.locator('li[data-kind=approval]').first();
  await approval.getByLabel('Comment (optional)').fill('fine by me');
  await approval.getByRole('button', { name: 'Approve' }).click();
  await approval.getByText('Approved.').waitFor();

  const pause = page.locator('#pause');
  await pause.getByLabel('Answer').fill('42');
  await pause.getByRole('button', { name: 'Submit' }).click();
  await pause.getByText('Thank you').waitFor();
  await shot(page, 'embed');
  const names = await page.evaluate(() => window.__events.map((e) => e.name));
  must(names.includes('svc-form:submitted') && names.includes('form:submitted'), 'form events: ' + names);
});

// 5b. Frames: the site may frame the hosted page of a form that lists it in
// settings.frameAncestors; not that of a form that lists nobody, nor the console.
await step('frames', async (page) => {
  await page.goto(new URL('/frames', cfg.embed).href, { waitUntil: 'load' }); // every frame loaded or refused
  await page.frameLocator('#listed').locator('svc-form form').waitFor();
  for (const id of ['unlisted', 'console']) {
    const frame = await (await page.$('#' + id)).contentFrame();
    must(!frame.url().startsWith(cfg.gateway), id + ': the browser refused the frame, showed ' + frame.url());
    must(await frame.locator('svc-form, #steps, input').count() === 0, id + ': nothing of the gateway in the frame');
  }
  await shot(page, 'frames');
});

// 6. A schema the SDK cannot render says so instead of a blank element.
await step('badSchema', async (page) => {
  await page.goto(cfg.embed + '?bad=1');
  await page.locator('#bad').getByText('cannot show').waitFor();
});

// 7. The console's runs, run page and tasks (e2e/console-runs.mjs).
results.axeRuns = await consoleRuns({ step, shot, must, cfg });

// 7b. The server's own checks come back by field: an address the browser lets through
// and the service refuses; what was typed stays. A form with redirectUrl goes there.
await step('serverErrors', async (page) => {
  await page.goto(cfg.gateway + '/forms/' + cfg.publicForm);
  await page.getByLabel('Email').fill('ada..lovelace@example.com');
  await page.getByLabel('Name').fill('Ada');
  await page.getByRole('button', { name: 'Submit' }).click();
  const field = page.locator('.svc-field[data-key=email]');
  await field.locator('.svc-error').filter({ hasText: 'not an email address' }).waitFor();
  must(await page.getByLabel('Email').getAttribute('aria-invalid') === 'true', 'the field is marked invalid');
  must(await page.getByLabel('Name').inputValue() === 'Ada', 'what was typed stays');
  await shot(page, 'server-errors');
  await page.goto(cfg.gateway + '/forms/' + cfg.redirectForm);
  await page.getByLabel('Email').fill('ada@example.com');
  await page.getByRole('button', { name: 'Submit' }).click();
  await page.waitForURL(/\/thanks$/);
  must(await page.locator('h1').innerText() === 'Thanks from the site', 'redirected to redirectUrl');
});

// 7c. Every field type renders as it should; display-only types are shown and never
// required; values come out typed. <svc-form-button> opens the hosted page.
await step('allTypes', async (page) => {
  await page.goto(cfg.embed);
  const f = page.locator('#types');
  await f.locator('form').waitFor();
  const type = (label) => f.getByLabel(label).evaluate((e) => e.tagName.toLowerCase() + (e.type ? ':' + e.type : ''));
  const want = { Name: 'input:text', Secret: 'input:password', Notes: 'textarea:textarea', Quantity: 'input:number', Price: 'input:number',
    Level: 'input:range', Email: 'input:email', Day: 'input:date', Colour: 'select:select-one', Tags: 'select:select-multiple' };
  for (const [label, t] of Object.entries(want)) must(await type(label) === t, label + ' renders as ' + t + ', not ' + await type(label));
  must(await f.getByRole('group', { name: 'Checks' }).locator('input[type=checkbox]').count() === 2, 'a checklist of two boxes');
  must(await f.getByText('Read this first.').count() === 1, 'content shows its text');
  for (const label of ['Upload', 'Signature', 'Grid', 'Customer', 'Total']) {
    must(await f.locator('.svc-field').filter({ hasText: label }).locator('.svc-display').count() === 1, label + ' is shown display-only');
  }
  must(await f.getByText('EUR').count() === 1, 'money shows its unit');
  await f.getByRole('button', { name: 'Check' }).click();
  const errs = await f.locator('.svc-error').allInnerTexts();
  must(errs.filter((e) => e === 'Required.').length === 2, 'only the two required fields are required: ' + errs);
  await f.getByLabel('Name').fill('Ada');
  await f.getByLabel('Quantity').fill('11');
  await f.getByRole('button', { name: 'Check' }).click();
  await f.getByText('At most 10.').waitFor();
  await f.getByLabel('Quantity').fill('3');
  await f.getByLabel('Price').fill('12.50');
  await f.getByLabel('Colour').selectOption('blue');
  await f.getByLabel('Tags').selectOption(['a', 'b']);
  await f.getByLabel('Two').check();
  await shot(page, 'all-types');
  await f.getByRole('button', { name: 'Check' }).click();
  await page.waitForFunction(() => window.__events.some((e) => e.name === 'svc-form:submitted' && e.detail.data && e.detail.data.name === 'Ada'));
  const data = await page.evaluate(() => window.__events.find((e) => e.name === 'svc-form:submitted' && e.detail.data.name === 'Ada').detail.data);
  must(data.qty === 3 && data.price === 12.5 && data.color === 'blue' && JSON.stringify(data.tags) === '["a","b"]' && JSON.stringify(data.checks) === '["2"]',
    'typed values: ' + JSON.stringify(data));
  must(!('upload' in data) && !('intro' in data), 'display-only types submit nothing');
  const [popup] = await Promise.all([context.waitForEvent('page'), page.locator('#button').getByRole('button', { name: 'Contact us' }).click()]);
  await popup.waitForLoadState();
  must(popup.url().startsWith(cfg.gateway + '/forms/'), 'the button opens the hosted page: ' + popup.url());
  await popup.close();
});

// 7d. The console's workflows, tables, documents, webhooks, agents and forms pages.
results.axe = await consolePages({ step, shot, must, cfg });
// 7b. The SDK's fixes of issue 34 (sdk-fixes.mjs).
await sdkFixes({ step, shot, must, code, cfg });

// 8. How fast the hosted page renders its form: cold (a new browser context: nothing
// cached) and warm (the SDK cached), many loads each; median, p90 and worst.
await step('perf', async () => {
  async function load(ctx, url) {
    const page = await ctx.newPage();
    await page.goto(url || cfg.gateway + '/forms/' + cfg.publicForm);
    await page.waitForSelector(url ? 'h1' : 'svc-form form');
    await page.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0);
    const t = await page.evaluate(() => ({
      rendered: (performance.getEntriesByName('svc-form:rendered')[0] || {}).startTime || 0,
      fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0,
    }));
    await page.close();
    return t;
  }
  function stats(xs) {
    const v = xs.slice().sort((a, b) => a - b);
    const q = (p) => Math.round(v[Math.min(v.length - 1, Math.floor(p * v.length))]);
    return { n: v.length, median: q(0.5), p90: q(0.9), max: Math.round(v[v.length - 1]) };
  }
  const cold = [], coldFcp = [], warm = [], warmFcp = [], blankFcp = [];
  const rounds = Number(process.env.SVC_E2E_PERF_ROUNDS || 8);
  for (let i = 0; i < rounds; i++) {
    const ctx = await browser.newContext();
    const t = await load(ctx);
    cold.push(t.rendered); coldFcp.push(t.fcp);
    await ctx.close();
    const bctx = await browser.newContext();
    blankFcp.push((await load(bctx, new URL('/blank', cfg.embed).href)).fcp);
    await bctx.close();
  }
  const ctx = await browser.newContext();
  await load(ctx);
  for (let i = 0; i < 2 * rounds; i++) { const t = await load(ctx); warm.push(t.rendered); warmFcp.push(t.fcp); }
  await ctx.close();
  return { coldRender: stats(cold), coldFcp: stats(coldFcp), warmRender: stats(warm), warmFcp: stats(warmFcp), blankPageFcp: stats(blankFcp) };
});

results.foreign = foreign;
if (foreign.length) results.failures.push('foreign-requests');
await browser.close();
console.log(JSON.stringify(results));
process.exit(results.failures.length ? 1 : 0);
