// checkAxe runs axe-core (pinned in package.json) on a page as it stands and throws when it
// finds a serious or critical violation, naming each rule and the elements it found; minor
// and moderate ones are returned for the report. The rules are WCAG 2.x A and AA.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const source = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export async function checkAxe(page, name) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(source); // not a <script>: the console's CSP refuses inline scripts
  const res = await page.evaluate(() => window.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
  }));
  const bad = res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) {
    const what = bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
    throw new Error(`axe on ${name}: ${bad.length} serious or critical violation(s):\n  ${what.join('\n  ')}`);
  }
  return { page: name, minor: res.violations.map((v) => v.id + ':' + v.impact) };
}
