// A run at its own URL: its steps, evidence and events, read again while it has not ended.
import { el, status, when, fail, json, ENDED } from './ui.js';

export const route = { name: 'run', section: 'runs', title: 'Run', nav: false, pattern: /^\/runs\/([^/]+)$/ };

export async function render(ctx, main, match) {
  const id = decodeURIComponent(match[1]);
  const box = el('div', { id: 'run', 'aria-live': 'polite' });
  main.replaceChildren(el('p', {}, [el('a', { href: '/console/runs', text: '← Runs' })]), el('h2', { text: 'Run ' + id }), box);
  const base = '/runs/' + encodeURIComponent(id);
  let ended = false;
  async function load() {
    if (ended) return;
    const [st, ev, evs] = await Promise.all([ctx.rt('GET', base + '/status'), ctx.rt('GET', base + '/evidence'), ctx.rt('GET', base + '/events?limit=200')]);
    if (!ctx.shown()) return;
    const steps = (st.steps || []).map((s) => el('tr', { 'data-step': String(s.index) }, [el('td', { text: String(s.index) }), el('td', {}, [el('code', { text: s.type })]), el('td', {}, [status(s.status)])]));
    const events = (evs.items || []).map((e) => el('tr', {}, [el('td', { text: when(e.timestamp) }), el('td', {}, [el('code', { text: e.event })])]));
    box.replaceChildren(
      el('p', {}, ['Status: ', status(st.status), st.reason ? ' — ' + st.reason : '']),
      el('h3', { text: 'Steps' }),
      el('table', { id: 'steps' }, [el('thead', {}, [el('tr', {}, [el('th', { text: '#' }), el('th', { text: 'Type' }), el('th', { text: 'Status' })])]), el('tbody', {}, steps)]),
      el('h3', { text: 'Evidence' }),
      json({ counts: ev.counts, decisions: ev.decisions, effects: ev.effects, exceptions: ev.exceptions }),
      el('h3', { text: 'Events' }),
      events.length ? el('table', {}, [el('tbody', {}, events)]) : el('p', { text: 'No events yet.' }));
    ended = ENDED.includes(st.status);
  }
  try { await load(); } catch (e) { fail(box, e); }
  ctx.every(1000, load);
}
