// Webhooks: each registered webhook with its health; a webhook's deliveries, each with
// its attempts (status and time), linked to its run, and sent again on request (POST
// /deliveries/{id}/redeliver).
import { el, status, when } from './ui.js';
import { link, heading, pagedTable, dataTable, problem, short } from './pagekit.js';

export const route = { name: 'webhooks', title: 'Webhooks', nav: true, pattern: /^\/webhooks(?:\/([^/]+))?$/ };

// health is how a webhook fares: disabled (its circuit open after failures in a row),
// failing, or healthy.
export function health(h) {
  if (h.disabled) return el('span', { className: 'status failed', text: 'disabled' + (h.disabled_at ? ' since ' + when(h.disabled_at) : '') });
  if (h.consecutive_failures > 0) return el('span', { className: 'status pending', text: `failing: ${h.consecutive_failures} in a row` });
  return el('span', { className: 'status completed', text: 'healthy' });
}

export async function render(ctx, main, match) {
  if (match[1]) return hook(ctx, main, decodeURIComponent(match[1]));
  main.replaceChildren(heading('Webhooks', 'Where events are sent, and how the last deliveries fared.'), el('div', { className: 'card' }, [pagedTable('Webhooks', [
    { title: 'Target', cell: (h) => link('/webhooks/' + encodeURIComponent(h.id), h.url) },
    { title: 'Event', cell: (h) => h.event_alias || h.event },
    { title: 'Health', cell: health },
    { title: 'Signed', cell: (h) => h.has_secret ? 'yes' : 'no' },
    { title: 'Created', cell: (h) => when(h.created_at) },
  ], (cursor) => ctx.rt('GET', '/webhooks?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')), { empty: 'No webhook is registered.' })]));
}

async function hook(ctx, main, id) {
  const h = await ctx.rt('GET', '/webhooks/' + encodeURIComponent(id));
  const list = pagedTable('Deliveries', [
    { title: 'Delivery', cell: (d) => short(d.delivery_id) },
    { title: 'Run', cell: (d) => d.run_id ? link('/runs/' + encodeURIComponent(d.run_id), d.run_id.slice(0, 12) + '…', { title: d.run_id, 'aria-label': 'Run ' + d.run_id }) : '' },
    { title: 'Status', cell: (d) => status(d.status) },
    { title: 'Attempts', cell: (d) => String(d.attempts) },
    { title: 'Last answer', cell: (d) => d.last_status_code ? String(d.last_status_code) : (d.last_error || '') },
    { title: 'Created', cell: (d) => when(d.created_at) },
    { title: 'Actions', cell: (d) => actions(ctx, d) },
  ], (cursor) => ctx.rt('GET', '/webhooks/' + encodeURIComponent(id) + '/deliveries?limit=25' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')),
  { empty: 'No delivery yet.', rowAttrs: (d) => ({ 'data-delivery': d.delivery_id }) });
  main.replaceChildren(el('p', {}, [link('/webhooks', '← Webhooks')]), heading(h.url, 'Sends ' + (h.event_alias || h.event) + ' · ' + h.id),
    el('div', { className: 'card' }, [el('p', {}, ['Health: ', health(h)]), el('h3', { text: 'Deliveries' }), list]));
}

// actions: show a delivery's attempts in a row below its own, and send it again; after a
// redelivery its row shows what the service now says of it.
function actions(ctx, d) {
  const out = el('div', { className: 'attempts' });
  const detail = el('tr', { className: 'detail' }, [el('td', { colspan: '7' }, [out])]);
  const msg = el('span', { role: 'status' });
  const show = el('button', { type: 'button', className: 'btn secondary small', 'aria-expanded': 'false', text: 'Attempts',
    'aria-label': 'Attempts of delivery ' + d.delivery_id });
  const row = () => show.closest('tr');
  function open(yes) {
    show.setAttribute('aria-expanded', String(yes));
    if (yes && !detail.isConnected) row().after(detail);
    if (!yes) detail.remove();
  }
  async function load() {
    try {
      const full = await ctx.rt('GET', '/deliveries/' + encodeURIComponent(d.delivery_id));
      const list = full.attempt_list || [];
      out.replaceChildren(list.length ? dataTable('Attempts of ' + d.delivery_id, [
        { title: 'Attempt', cell: (a) => '#' + a.n },
        { title: 'At', cell: (a) => when(a.at) },
        { title: 'Outcome', cell: (a) => status(a.outcome) },
        { title: 'HTTP status', cell: (a) => a.status_code ? String(a.status_code) : '' },
        { title: 'Took', cell: (a) => a.latency_ms + ' ms' },
        { title: 'Error', cell: (a) => a.error || '' },
      ], list, (a) => ({ 'data-attempt': String(a.n) })) : el('p', { text: 'Not attempted yet.' }));
      const cells = row().cells;
      cells[2].replaceChildren(status(full.status));
      cells[3].textContent = String(full.attempts);
      cells[4].textContent = full.last_status_code ? String(full.last_status_code) : (full.last_error || '');
      return full;
    } catch (e) { out.replaceChildren(problem(e)); return null; }
  }
  show.addEventListener('click', () => {
    const yes = show.getAttribute('aria-expanded') !== 'true';
    open(yes);
    if (yes) load();
  });
  const again = el('button', { type: 'button', className: 'btn secondary small', text: 'Redeliver', 'aria-label': 'Redeliver ' + d.delivery_id });
  again.addEventListener('click', async () => {
    again.disabled = true;
    msg.textContent = 'Sending again…';
    try {
      const before = ((await ctx.rt('GET', '/deliveries/' + encodeURIComponent(d.delivery_id))).attempt_list || []).length;
      await ctx.rt('POST', '/deliveries/' + encodeURIComponent(d.delivery_id) + '/redeliver');
      // The worker sends it shortly: read its attempts until one more is there.
      open(true);
      let done = false;
      for (let i = 0; i < 30 && !done; i++) {
        const full = await load();
        done = !!full && full.status !== 'pending' && (full.attempt_list || []).length > before;
        if (done) msg.textContent = 'Sent again: ' + full.status + '.';
        else await new Promise((r) => setTimeout(r, 500));
      }
      if (!done) msg.textContent = 'Queued: it is sent shortly.';
    } catch (e) { msg.textContent = e.message; } finally { again.disabled = false; }
  });
  return el('div', {}, [el('div', { className: 'row' }, [show, again]), msg]);
}
