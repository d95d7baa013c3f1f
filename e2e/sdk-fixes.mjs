// The browser SDK's fixes of issue 34, each a step that failed before its fix: a
// sidebar that takes no focus on load, an empty email answered by field and reason, a
// sign-in in one element shared with the other elements of the page, an event heard once
// on document, and a hosted page's logo that cannot load hidden rather than broken.
// run.mjs calls sdkFixes with its helpers.

export async function sdkFixes({ step, shot, must, code, cfg }) {
  const api = (method, path, body) => fetch(cfg.gateway + path, {
    method, headers: { Authorization: 'Bearer ' + cfg.liveKey, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => null) }));

  // A page of another site with a form pause and the task sidebar, nothing signed in.
  await step('sdk-signin-shared', async (page) => {
    const run = await api('POST', '/workflows/' + cfg.pauseWorkflow + '/execute', { input: {} });
    must(run.status === 202, 'a run started: ' + run.status);
    for (let i = 0; ; i++) {
      const s = await api('GET', '/runs/' + run.body.id + '/status?wait=10s&context=false');
      if (s.body && s.body.status === 'paused') break;
      must(i < 5, 'the run pauses at its form: ' + JSON.stringify(s.body));
    }
    await page.goto(new URL('/blank', cfg.embed).href);
    await page.setContent(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Two elements</title>
      <script>window.__heard = []; ['form:submitted', 'svc-form:submitted'].forEach(function (n) {
        document.addEventListener(n, function (e) { window.__heard.push(n); }); });</script>
      <script src="${cfg.gateway}/sdk/v1.js"></script></head><body>
      <h1>A portal</h1>
      <section id="pause"><h2>Your answer</h2><svc-form run-id="${run.body.id}" step-id="0"></svc-form></section>
      <aside><svc-task-sidebar poll-seconds="1"></svc-task-sidebar></aside>
      <script>SvcSDK.init({baseUrl: ${JSON.stringify(cfg.gateway)}, publishableKey: ${JSON.stringify(cfg.pk)}});</script>
      </body></html>`);
    const side = page.locator('svc-task-sidebar');
    await side.getByLabel('Email').waitFor();
    await page.locator('#pause').getByLabel('Answer').waitFor();
    // The sidebar's sign-in box does not take the focus as the page loads.
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.tagName);
    must(focused === 'BODY', 'nothing has the focus on load, not ' + focused);

    // An empty email: the box says which field and why, next to the field.
    await side.getByRole('button', { name: 'Send me a code' }).click();
    await side.getByText('Email: Enter your email address').waitFor();
    must(await side.getByLabel('Email').getAttribute('aria-invalid') === 'true', 'the email field is marked invalid');
    must(!(await side.innerText()).includes('validation failed'), 'no bare "validation failed"');
    await shot(page, 'sdk-empty-email');

    // The pause asks for a sign-in at submit; the person signs in in the sidebar instead.
    await page.locator('#pause').getByLabel('Answer').fill('7');
    await page.locator('#pause').getByRole('button', { name: 'Submit' }).click();
    await page.locator('#pause').getByText('Sign in with your email to submit this form.').waitFor();
    await side.getByLabel('Email').fill('ann@example.com');
    await side.getByRole('button', { name: 'Send me a code' }).click();
    await side.getByLabel('The 6-digit code we sent you').fill(await code('ann@example.com'));
    await side.getByRole('button', { name: 'Sign in' }).click();
    await side.getByRole('heading', { name: 'Your tasks' }).waitFor();
    // The pause's own sign-in box is gone: the form is back, the answer kept.
    await page.locator('#pause').getByLabel('Answer').waitFor({ timeout: 5000 });
    must(await page.locator('#pause').getByLabel('Answer').inputValue() === '7', 'the answer typed before the sign-in is kept');
    await shot(page, 'sdk-signin-shared');
    await page.locator('#pause').getByRole('button', { name: 'Submit' }).click();
    await page.locator('#pause').getByText('Thank you').waitFor();
    const heard = await page.evaluate(() => window.__heard);
    must(JSON.stringify(heard) === JSON.stringify(['svc-form:submitted', 'form:submitted']), 'each event heard once on document: ' + heard);
    const pause = await api('GET', '/forms/' + run.body.id + '/0');
    must(pause.body && pause.body.status === 'submitted', 'the pause was submitted: ' + JSON.stringify(pause.body));
  });

  // A hosted page whose logo cannot load: the image is hidden, the brand's name stays.
  await step('logo-fallback', async (page) => {
    const broken = 'https://' + new URL(cfg.embed).host + '/logo.png'; // the test's site speaks no TLS
    const form = await api('POST', '/external-forms', {
      name: 'Logo check', is_public: true,
      schema: { version: 'form_schema_v1', pages: [{ id: 'p1', fields: [{ key: 'name', type: 'text', label: 'Name' }] }] },
      settings: { branding: { name: 'Brand Co', logoUrl: broken } },
    });
    must(form.status === 201, 'the form was made: ' + form.status + ' ' + JSON.stringify(form.body));
    await page.goto(cfg.gateway + '/forms/' + form.body.id);
    await page.waitForSelector('svc-form form');
    const logo = page.locator('header img[data-svc-logo]');
    await page.waitForFunction(() => document.querySelector('header img[data-svc-logo]').hidden, null, { timeout: 5000 });
    must(await logo.isHidden(), 'the broken logo is hidden');
    must(await page.locator('header').getByText('Brand Co').isVisible(), "the brand's name stays");
    await shot(page, 'logo-fallback');
  });
}
