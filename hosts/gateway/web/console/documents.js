// Documents: the organization's uploaded documents, the versions of each, each version's
// content to download (fetched with the console's token, then saved from memory: a plain
// link cannot carry the Authorization header).
import { el, when } from './ui.js';
import { link, heading, pagedTable, dataTable, problem, short } from './pagekit.js';

export const route = { name: 'documents', title: 'Documents', nav: true, pattern: /^\/documents(?:\/([^/]+))?$/ };

export function size(n) {
  if (n === undefined || n === null) return '';
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
  return (n / 1048576).toFixed(1) + ' MiB';
}

export async function render(ctx, main, match) {
  if (match[1]) return doc(ctx, main, decodeURIComponent(match[1]));
  const tag = ctx.query.get('tag') || '';
  const input = el('input', { id: 'doc-tag', name: 'tag', value: tag });
  const form = el('form', { className: 'filters', 'aria-label': 'Filter documents' }, [el('div', {}, [el('label', { for: 'doc-tag', text: 'Tag' }), input]),
    el('button', { className: 'btn', type: 'submit', text: 'Filter' })]);
  form.addEventListener('submit', (ev) => { ev.preventDefault(); ctx.navigate('/documents', input.value ? { tag: input.value } : {}); });
  main.replaceChildren(heading('Documents', 'Files uploaded with POST /documents; every upload of a new version is kept.'), el('div', { className: 'card' }, [form, pagedTable('Documents', [
    { title: 'Name', cell: (d) => link('/documents/' + encodeURIComponent(d.id), d.name) },
    { title: 'Latest', cell: (d) => 'v' + d.version },
    { title: 'Type', cell: (d) => d.content_type },
    { title: 'Size', cell: (d) => size(d.size_bytes) },
    { title: 'Tags', cell: (d) => (d.tags || []).join(', ') },
    { title: 'Updated', cell: (d) => when(d.updated_at) },
  ], (cursor) => ctx.rt('GET', '/documents?limit=50' + (tag ? '&tag=' + encodeURIComponent(tag) : '') + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')),
  { empty: tag ? 'No document has this tag.' : 'No document yet.' })]));
}

async function doc(ctx, main, id) {
  const d = await ctx.rt('GET', '/documents/' + encodeURIComponent(id));
  const msg = el('div', { role: 'status', className: 'msg' });
  const versions = (d.versions && d.versions.length ? d.versions : [d]).slice().sort((a, b) => b.version - a.version);
  main.replaceChildren(el('p', {}, [link('/documents', '← Documents')]),
    heading(d.name, `${versions.length} version${versions.length === 1 ? '' : 's'} · ${d.id}` + (d.expires_at ? ' · expires ' + when(d.expires_at) : '')),
    el('div', { className: 'card' }, [el('h3', { text: 'Versions' }), dataTable('Versions of ' + d.name, [
      { title: 'Version', cell: (v) => 'v' + v.version + (v.version === d.version ? ' (latest)' : '') },
      { title: 'Uploaded', cell: (v) => when(v.created_at) },
      { title: 'Type', cell: (v) => v.content_type },
      { title: 'Size', cell: (v) => size(v.size_bytes) },
      { title: 'SHA-256', cell: (v) => v.sha256 ? short(v.sha256) : '' },
      { title: 'Content', cell: (v) => el('button', { type: 'button', className: 'btn secondary', text: 'Download v' + v.version,
        'aria-label': `Download v${v.version} of ${d.name}`, onclick: () => download(ctx, d, v, msg) }) },
    ], versions, (v) => ({ 'data-version': String(v.version) })), msg]));
}

async function download(ctx, d, v, msg) {
  msg.className = 'msg';
  msg.textContent = 'Downloading version ' + v.version + '…';
  try {
    const r = await ctx.raw('/documents/' + encodeURIComponent(d.id) + '/content?version=' + v.version);
    if (!r.ok) throw new Error('HTTP ' + r.status);
    const url = URL.createObjectURL(await r.blob());
    const a = el('a', { href: url, download: d.name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    msg.className = 'msg good';
    msg.textContent = `Version ${v.version} of ${d.name} downloaded.`;
  } catch (e) { msg.replaceChildren(problem(e)); }
}
