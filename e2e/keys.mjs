// Keyboard-only helpers of the console's e2e: Tab (or Shift+Tab) to a control by its
// accessible name, checking that every control reached on the way has one; where the focus
// is; and that a dialog keeps it while Tab goes round.

// focused is the focused element's role and accessible name as Chromium's accessibility
// tree has them (through the DevTools protocol: the name a screen reader announces), with
// its tag and text; tag '' when nothing is focused.
const sessions = new WeakMap();
export async function focused(page) {
  let cdp = sessions.get(page);
  if (!cdp) { cdp = await page.context().newCDPSession(page); sessions.set(page, cdp); }
  const { result } = await cdp.send('Runtime.evaluate', { expression: 'document.activeElement === document.body ? null : document.activeElement' });
  if (!result.objectId) return { role: '', name: '', tag: '', text: '' };
  const [tag, text] = await page.evaluate(() => [document.activeElement.tagName.toLowerCase(), document.activeElement.textContent.trim().slice(0, 80)]);
  const { nodes } = await cdp.send('Accessibility.getPartialAXTree', { objectId: result.objectId, fetchRelatives: false });
  const n = nodes.find((x) => !x.ignored) || nodes[0] || {};
  await cdp.send('Runtime.releaseObject', { objectId: result.objectId }).catch(() => {});
  return { role: (n.role && n.role.value) || '', name: ((n.name && n.name.value) || '').trim(), tag, text };
}

// named says whether what holds the focus has a name: a control its accessible name; a
// region that scrolls (a <pre> of JSON, reachable to scroll it) its text, which is what a
// screen reader reads.
function named(f) {
  if (f.name) return true;
  return f.tag === 'pre' && /\S/.test(f.text);
}

// tabTo presses Tab (back: Shift+Tab) until the focused control's accessible name matches
// name (a string: exactly; a RegExp), at most max presses. Every control it passes must
// have a name: it throws naming the first that has none. Returns the presses.
export async function tabTo(page, name, { back = false, max = 60, within = null } = {}) {
  const want = (n) => (name instanceof RegExp ? name.test(n) : n === name);
  const passed = [];
  for (let i = 1; i <= max; i++) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const f = await focused(page);
    if (!f.tag) continue; // the document itself, between the last control and the first
    if (!named(f)) throw new Error('a control without an accessible name: <' + f.tag + '> ' + f.text + ' (after ' + passed.join(' → ') + ')');
    if (within && !(await page.evaluate((sel) => !!document.activeElement.closest(sel), within))) {
      throw new Error('the focus left ' + within + ' for <' + f.tag + '> ' + f.text);
    }
    passed.push(f.role + ' "' + f.name + '"');
    if (want(f.name)) return i;
  }
  throw new Error('Tab never reached ' + name + ' in ' + max + ' presses: ' + passed.join(' → '));
}

// focusIn says whether the focus is inside the element sel selects (or is it).
export function focusIn(page, sel) {
  return page.evaluate((s) => !!(document.activeElement && document.activeElement.closest(s)), sel);
}

// trapped goes round a dialog with Tab and Shift+Tab (twice its controls each way): the
// focus never leaves it and every control in it has a name. Returns the controls' count.
export async function trapped(page, sel) {
  const n = await page.locator(sel).evaluate((d) => d.querySelectorAll('a[href], button:not([disabled]), input:not([disabled]), select, textarea, summary, [tabindex="0"]').length);
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let i = 0; i < 2 * n + 1; i++) {
      await page.keyboard.press(key);
      if (!(await focusIn(page, sel))) throw new Error(key + ' left the dialog ' + sel + ' (press ' + (i + 1) + ')');
      const f = await focused(page);
      if (!named(f)) throw new Error('a control without an accessible name in ' + sel + ': <' + f.tag + '> ' + f.text);
    }
  }
  return n;
}
