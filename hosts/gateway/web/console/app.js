// svcflow console: sign-in, the organization picker, the navigation and the router. Native ES
// modules, no build step. Each page (console/pages.js) exports
//   route = { name, title, nav, session?, pattern }   // pattern matches the path after /console
//   render(ctx, main, match)                            // fills main
// and gets a ctx = { org, who, session, rt, raw, api, el, status, when, duration, navigate, query,
// onLeave, every, refresh }. URLs are real paths under /console (History API); the gateway
// serves console.html for each, so reloads and deep links work; query strings carry filters.
import { el, status, when, duration, fail, problem } from './ui.js';
import pages from './pages.js';

const KEY = 'svc-console-token';
const BASE = '/console';
const state = {
  token: sessionStorage.getItem(KEY) || '',
  org: sessionStorage.getItem(KEY + ':org') || '',
  who: null, orgs: null, leave: [], seq: 0,
};
const main = document.getElementById('app');
const nav = document.getElementById('nav');
const whoBox = document.getElementById('who');
const signoutBtn = document.getElementById('signout');
const live = document.getElementById('announce');

function isSession() { return state.token !== '' && !state.token.startsWith('svc_mgmt_'); }

// api calls a gateway path with the token; an answer that is not 2xx throws an Error with
// the problem's detail, status and code.
export async function api(method, path, body) {
  let r;
  try {
    r = await fetch(path, {
      method, credentials: 'omit',
      headers: Object.assign({ Authorization: 'Bearer ' + state.token, Accept: 'application/json' }, body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch (e) {
    const err = new Error('The service could not be reached. Check the connection and try again.');
    err.status = 0;
    throw err;
  }
  const t = await r.text();
  let d = null;
  try { d = t ? JSON.parse(t) : null; } catch (e) { d = null; }
  if (!r.ok) {
    const err = new Error((d && (d.detail || d.title)) || ('HTTP ' + r.status));
    err.status = r.status;
    err.code = d && d.code;
    err.body = d;
    if (r.status === 401) signOut();
    throw err;
  }
  return d;
}

// rt calls a runtime path of the current organization through the console's window.
function rt(method, path, body) {
  return api(method, BASE + '/api/orgs/' + encodeURIComponent(state.org) + path, body);
}

// raw fetches a runtime path of the current organization whose answer is not JSON (a
// document's content): the Response, for the page to read as it needs.
function raw(path) {
  return fetch(BASE + '/api/orgs/' + encodeURIComponent(state.org) + path, { credentials: 'omit', headers: { Authorization: 'Bearer ' + state.token } });
}

function signOut() {
  leave();
  sessionStorage.removeItem(KEY);
  state.token = ''; state.who = null; state.orgs = null;
  start();
}
signoutBtn.addEventListener('click', signOut);

function announce(text) { live.textContent = ''; setTimeout(() => { live.textContent = text; }, 30); }

function signIn() {
  nav.replaceChildren();
  signoutBtn.hidden = true;
  whoBox.textContent = '';
  const msg = el('div', { className: 'msg bad', role: 'alert' });
  const input = el('input', { id: 'token', type: 'password', autocomplete: 'off', required: true });
  const form = el('form', { className: 'card narrow', 'aria-labelledby': 'signin-title' }, [
    el('h2', { id: 'signin-title', text: 'Sign in' }),
    el('p', { text: 'Paste your management token (svc_mgmt_…) to see your organizations\u2019 runs and tasks, or an SDK session token (svc_sess_…) to see your tasks.' }),
    el('label', { for: 'token', text: 'Token' }), input, msg,
    el('div', { className: 'row' }, [el('button', { className: 'btn', type: 'submit', text: 'Sign in' })]),
  ]);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    state.token = input.value.trim();
    try {
      state.who = await api('GET', isSession() ? '/sdk/session' : '/gateway/account');
      sessionStorage.setItem(KEY, state.token);
      start();
    } catch (e) {
      state.token = '';
      msg.textContent = problem(e);
      input.focus();
    }
  });
  main.replaceChildren(form);
  document.title = 'Sign in · svcflow console';
  input.focus();
}

// start signs in (when needed), loads the account's organizations, and shows the page of
// the current URL.
async function start() {
  if (!state.token) return signIn();
  try {
    if (!state.who) state.who = await api('GET', isSession() ? '/sdk/session' : '/gateway/account');
    if (!isSession() && !state.orgs) state.orgs = (await api('GET', '/gateway/orgs?limit=500')).items || [];
  } catch (e) {
    if (e.status === 401 || e.status === 403) { sessionStorage.removeItem(KEY); state.token = ''; state.who = null; return signIn(); }
    return fail(main, e);
  }
  signoutBtn.hidden = false;
  whoBox.textContent = state.who.email + (isSession() ? ' · ' + state.who.org_id : '');
  if (!isSession()) {
    if (!state.orgs.length) {
      nav.replaceChildren();
      return main.replaceChildren(el('div', { className: 'card', text: 'This account has no organization yet: create one with POST /gateway/orgs.' }));
    }
    const asked = new URLSearchParams(location.search).get('org');
    if (asked && state.orgs.some((o) => o.id === asked)) state.org = asked;
    if (!state.orgs.some((o) => o.id === state.org)) state.org = state.orgs[0].id;
    sessionStorage.setItem(KEY + ':org', state.org);
  } else {
    state.org = state.who.org_id;
  }
  drawNav();
  show(false);
}

function drawNav() {
  const links = pages.filter((p) => p.route.nav && (!isSession() || p.route.session)).map((p) => {
    const a = el('a', { href: BASE + '/' + p.route.name, 'data-page': p.route.name, text: p.route.title });
    return el('li', {}, [a]);
  });
  const parts = [el('ul', {}, links)];
  if (!isSession()) {
    const pick = el('select', { id: 'org' });
    for (const o of state.orgs) pick.appendChild(el('option', { value: o.id, text: o.name + ' (' + o.id + ')', selected: o.id === state.org }));
    pick.addEventListener('change', () => {
      state.org = pick.value;
      sessionStorage.setItem(KEY + ':org', state.org);
      const p = current();
      // Another organization's run is not this one's: back to the list of the page's kind.
      navigate('/' + (p && p.page.route.nav ? p.page.route.name : 'runs'));
    });
    parts.push(el('div', { className: 'org' }, [el('label', { for: 'org', text: 'Organization' }), pick]));
  }
  nav.replaceChildren(...parts);
}

// current is the page of the URL and its match.
function current() {
  let path = location.pathname.slice(BASE.length) || '/';
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  for (const page of pages) {
    if (isSession() && !page.route.session) continue;
    const m = path.match(page.route.pattern);
    if (m) return { page, match: m, path };
  }
  return null;
}

function leave() {
  const fns = state.leave;
  state.leave = [];
  for (const fn of fns) { try { fn(); } catch (e) { /* a page's cleanup */ } }
}

// navigate goes to a console path ('/runs/abc') with a query (object or URLSearchParams;
// empty values dropped). opts.replace replaces the history entry (a filter typed in place);
// opts.quiet does not render again (the page already shows it).
function navigate(path, query, opts) {
  opts = opts || {};
  const q = new URLSearchParams();
  if (query) for (const [k, v] of (query instanceof URLSearchParams ? query.entries() : Object.entries(query))) {
    if (v !== undefined && v !== null && v !== '') q.append(k, v);
  }
  const url = BASE + path + (q.toString() ? '?' + q : '');
  if (url === location.pathname + location.search && !opts.force) { if (!opts.quiet) show(true); return; }
  history[opts.replace ? 'replaceState' : 'pushState']({}, '', url);
  if (!opts.quiet) show(true);
}

// show renders the page of the current URL into main; moved says the person navigated
// (focus goes to the page's heading, the change is announced).
async function show(moved) {
  leave();
  const seq = ++state.seq;
  const found = current();
  if (!found) {
    if (location.pathname === BASE || location.pathname === BASE + '/') {
      history.replaceState({}, '', BASE + (isSession() ? '/tasks' : '/runs') + location.search);
      return show(moved);
    }
    main.replaceChildren(el('div', { className: 'card' }, [el('h2', { tabindex: '-1', text: 'Not found' }),
      el('p', {}, ['The console has no page at ', el('code', { text: location.pathname }), '. ', el('a', { href: BASE + '/runs', text: 'Go to the runs' }), '.'])]));
    return;
  }
  for (const a of nav.querySelectorAll('a[data-page]')) {
    if (a.dataset.page === (found.page.route.section || found.page.route.name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const ctx = {
    org: state.org, who: state.who, session: isSession(),
    rt, raw, api, el, status, when, duration, navigate,
    query: new URLSearchParams(location.search),
    onLeave(fn) { state.leave.push(fn); },
    // every runs fn every ms milliseconds while the page is shown (not while a call is out).
    every(ms, fn) {
      let busy = false;
      const id = setInterval(async () => {
        if (busy || document.hidden) return;
        busy = true;
        try { await fn(); } catch (e) { /* the next tick tries again */ } finally { busy = false; }
      }, ms);
      state.leave.push(() => clearInterval(id));
    },
    // shown says the page is still the one on screen (an answer that arrives late is dropped).
    shown() { return seq === state.seq; },
    refresh() { show(false); },
  };
  document.title = found.page.route.title + ' · svcflow console';
  const box = el('div', { className: 'page', 'data-page': found.page.route.name });
  main.replaceChildren(box);
  try {
    await found.page.render(ctx, box, found.match);
  } catch (e) {
    if (seq !== state.seq) return;
    fail(box, e);
  }
  if (moved && seq === state.seq) {
    const h = box.querySelector('h2, h1');
    if (h) { h.setAttribute('tabindex', '-1'); h.focus({ preventScroll: false }); }
    announce(document.title.replace(' · svcflow console', ''));
  }
}

// Links inside the console navigate in place (a modified click opens a tab as usual).
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest && ev.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const u = new URL(a.href, location.href);
  if (u.origin !== location.origin || !(u.pathname === BASE || u.pathname.startsWith(BASE + '/')) || u.pathname.endsWith('.js')) return;
  ev.preventDefault();
  navigate(u.pathname.slice(BASE.length) || '/', u.searchParams);
});
window.addEventListener('popstate', () => { if (state.token && state.who) show(true); });

start();
