// A stand-in for i34-console's app.js: sign-in with a management token, an organization,
// a nav of the pages and a router over real paths under /console.
import { el, status, when, duration } from './ui.js';
import pages from './pages.js';

const KEY = 'svc-console-token';
const state = { token: sessionStorage.getItem(KEY) || '', org: sessionStorage.getItem(KEY + ':org') || '', leave: [] };
const app = document.getElementById('app');

async function api(method, path, body) {
  const r = await fetch(path, { method, credentials: 'omit',
    headers: Object.assign({ Authorization: 'Bearer ' + state.token }, body ? { 'Content-Type': 'application/json' } : {}),
    body: body ? JSON.stringify(body) : undefined });
  const t = await r.text();
  let d = null;
  try { d = t ? JSON.parse(t) : null; } catch { d = null; }
  if (!r.ok) { const e = new Error((d && d.detail) || 'HTTP ' + r.status); e.status = r.status; e.problem = d; throw e; }
  return d;
}
const rtBase = () => '/console/api/orgs/' + encodeURIComponent(state.org);
const rt = (method, path, body) => api(method, rtBase() + path, body);
// raw: an authorized fetch of a runtime path whose answer is not JSON (a document's content).
const raw = (path) => fetch(rtBase() + path, { credentials: 'omit', headers: { Authorization: 'Bearer ' + state.token } });

function navigate(path, query) {
  const q = query && [...new URLSearchParams(query)].length ? '?' + new URLSearchParams(query) : '';
  history.pushState(null, '', '/console' + path + q);
  route();
}
window.addEventListener('popstate', () => route());
document.addEventListener('click', (ev) => {
  const a = ev.target.closest && ev.target.closest('a[href^="/console/"]');
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || a.target) return;
  ev.preventDefault();
  const u = new URL(a.href);
  navigate(u.pathname.slice('/console'.length), u.search.slice(1));
});

async function signIn() {
  const input = el('input', { id: 'token', type: 'password', autocomplete: 'off', required: true });
  const msg = el('div', { className: 'msg bad', role: 'alert' });
  const form = el('form', { className: 'card', 'aria-label': 'Sign in' }, [el('h2', { text: 'Sign in' }),
    el('label', { for: 'token', text: 'Token' }), input, msg, el('div', { className: 'row' }, [el('button', { className: 'btn', type: 'submit', text: 'Sign in' })])]);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    state.token = input.value.trim();
    try { await api('GET', '/gateway/account'); sessionStorage.setItem(KEY, state.token); route(); } catch (e) { state.token = ''; msg.textContent = e.message; }
  });
  app.replaceChildren(form);
  input.focus();
}

let orgs = null;
async function route() {
  state.leave.splice(0).forEach((f) => { try { f(); } catch { /* leaving */ } });
  if (!state.token) return signIn();
  if (!orgs) orgs = (await api('GET', '/gateway/orgs?limit=500')).items || [];
  if (!state.org || !orgs.some((o) => o.id === state.org)) state.org = orgs.length ? orgs[0].id : '';
  const path = location.pathname.replace(/^\/console/, '') || '/runs';
  let match = null;
  const page = pages.find((p) => (match = p.route.pattern.exec(path))) || pages[0];
  const nav = el('nav', { 'aria-label': 'Pages' }, [el('ul', { className: 'row', style: 'list-style:none;padding:0;margin:0' },
    pages.filter((p) => p.route.nav).map((p) => el('li', {}, [el('a', { href: '/console/' + p.route.name, 'aria-current': p === page ? 'page' : null, text: p.route.title })])))]);
  const main = el('section', { id: 'view', 'aria-label': page.route.title });
  app.replaceChildren(nav, main);
  document.title = page.route.title + ' · svcflow console';
  const ctx = { org: state.org, rt, raw, api, el, status, when, duration, navigate, query: new URLSearchParams(location.search),
    onLeave: (f) => state.leave.push(f) };
  try { await page.render(ctx, main, match || []); } catch (e) {
    main.replaceChildren(el('div', { className: 'msg bad', role: 'alert', text: String(e && e.message || e) }));
  }
  const h = main.querySelector('h2');
  if (h) { h.tabIndex = -1; h.focus({ preventScroll: true }); }
}
route();
