/* svcflow console: runs, tasks and deliveries of an organization, through public routes only. No build step. */
(function () {
  'use strict';
  var app = document.getElementById('app');
  var KEY = 'svc-console-token';
  var state = { token: sessionStorage.getItem(KEY) || '', org: sessionStorage.getItem(KEY + ':org') || '', tab: 'runs', timer: 0 };

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      var v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'className') e.className = v;
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }
  function status(s) { return el('span', { className: 'status ' + s, text: s }); }
  function when(t) { return t ? new Date(t).toLocaleString() : ''; }

  function api(method, path, body) {
    return fetch(path, {
      method: method, credentials: 'omit',
      headers: Object.assign({ Authorization: 'Bearer ' + state.token }, body ? { 'Content-Type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined
    }).then(function (r) {
      return r.text().then(function (t) {
        var d = null;
        try { d = t ? JSON.parse(t) : null; } catch (e) { d = null; }
        if (!r.ok) { var err = new Error((d && d.detail) || ('HTTP ' + r.status)); err.status = r.status; throw err; }
        return d;
      });
    });
  }
  function rt(method, path, body) { return api(method, '/console/api/orgs/' + encodeURIComponent(state.org) + path, body); }
  function isMgmt() { return state.token.indexOf('svc_mgmt_') === 0; }

  function stop() { clearInterval(state.timer); state.timer = 0; }
  function fail(where, e) {
    if (e && e.status === 401) { signOut(); return; }
    where.replaceChildren(el('div', { className: 'msg bad', role: 'alert', text: String(e && e.message || e) }));
  }

  function signOut() {
    stop();
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(KEY + ':org');
    state.token = ''; state.org = '';
    render();
  }
  document.getElementById('signout').addEventListener('click', signOut);

  function signIn() {
    var msg = el('div', { className: 'msg bad', role: 'alert' });
    var input = el('input', { id: 'token', type: 'password', autocomplete: 'off', required: true });
    var form = el('form', { className: 'card', 'aria-label': 'Sign in' }, [
      el('h2', { text: 'Sign in' }),
      el('p', { text: 'Paste your management token (svc_mgmt_…) to see your organizations\u2019 runs, tasks and deliveries, or an SDK session token (svc_sess_…) to see your tasks.' }),
      el('label', { 'for': 'token', text: 'Token' }), input, msg,
      el('div', { className: 'row' }, [el('button', { className: 'btn', type: 'submit', text: 'Sign in' })])
    ]);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      state.token = input.value.trim();
      var check = isMgmt() ? api('GET', '/gateway/account') : api('GET', '/sdk/session');
      check.then(function (who) {
        sessionStorage.setItem(KEY, state.token);
        state.who = who;
        render();
      }, function (e) { state.token = ''; msg.textContent = e.message; input.focus(); });
    });
    app.replaceChildren(form);
    input.focus();
  }

  function render() {
    stop();
    var signout = document.getElementById('signout');
    if (!state.token) { signout.hidden = true; document.getElementById('who').textContent = ''; return signIn(); }
    signout.hidden = false;
    var who = state.who ? Promise.resolve(state.who) : (isMgmt() ? api('GET', '/gateway/account') : api('GET', '/sdk/session'));
    who.then(function (w) {
      state.who = w;
      document.getElementById('who').textContent = w.email + (isMgmt() ? '' : ' · ' + w.org_id);
      if (!isMgmt()) return tasksOfSession();
      return api('GET', '/gateway/orgs?limit=500').then(function (orgs) { shell(orgs.items || []); });
    }, function (e) { if (e.status === 401 || e.status === 403) signOut(); else fail(app, e); });
  }

  function shell(orgs) {
    if (!orgs.length) return app.replaceChildren(el('div', { className: 'card', text: 'This account has no organization yet: POST /gateway/orgs.' }));
    if (!state.org || !orgs.some(function (o) { return o.id === state.org; })) state.org = orgs[0].id;
    var pick = el('select', { id: 'org', 'aria-label': 'Organization' });
    orgs.forEach(function (o) { var op = el('option', { value: o.id, text: o.name + ' (' + o.id + ')' }); if (o.id === state.org) op.selected = true; pick.appendChild(op); });
    pick.addEventListener('change', function () { state.org = pick.value; sessionStorage.setItem(KEY + ':org', state.org); show(); });
    var tabs = el('nav', { role: 'tablist', 'aria-label': 'Views' });
    var body = el('section', { id: 'view', role: 'tabpanel' });
    [['runs', 'Runs'], ['tasks', 'Tasks'], ['deliveries', 'Deliveries']].forEach(function (t) {
      tabs.appendChild(el('button', { type: 'button', role: 'tab', id: 'tab-' + t[0], 'aria-selected': String(state.tab === t[0]), text: t[1], onclick: function () { state.tab = t[0]; show(); } }));
    });
    app.replaceChildren(el('div', { className: 'row' }, [el('label', { 'for': 'org', text: 'Organization' }), pick]), tabs, body);
    function show() {
      stop();
      Array.prototype.forEach.call(tabs.children, function (b) { b.setAttribute('aria-selected', String(b.id === 'tab-' + state.tab)); });
      ({ runs: runs, tasks: tasks, deliveries: deliveries })[state.tab](body);
    }
    show();
  }

  function runs(view) {
    function load() {
      return rt('GET', '/runs?limit=50').then(function (page) {
        var rows = (page.items || []).map(function (r) {
          return el('tr', {}, [
            el('td', {}, [el('a', { href: '#run=' + r.id, text: r.id, onclick: function (ev) { ev.preventDefault(); run(view, r.id); } })]),
            el('td', {}, [el('code', { text: r.workflow_id })]), el('td', {}, [status(r.status)]), el('td', { text: when(r.created_at) })]);
        });
        view.replaceChildren(el('div', { className: 'card' }, [el('h2', { text: 'Runs' }), rows.length ? el('table', {}, [
          el('thead', {}, [el('tr', {}, [el('th', { text: 'Run' }), el('th', { text: 'Workflow' }), el('th', { text: 'Status' }), el('th', { text: 'Started' })])]),
          el('tbody', {}, rows)]) : el('p', { text: 'No runs yet.' })]));
      }, function (e) { fail(view, e); });
    }
    load();
    state.timer = setInterval(load, 3000);
  }

  // run shows one run, live: its steps, evidence and events, read again every second while
  // it has not ended.
  function run(view, id) {
    stop();
    var head = el('div', { className: 'row' }, [el('button', { type: 'button', className: 'btn secondary', text: '← Runs', onclick: function () { runs(view); } }), el('h2', { text: id })]);
    var box = el('div', { id: 'run', 'aria-live': 'polite' });
    view.replaceChildren(el('div', { className: 'card' }, [head, box]));
    function load() {
      return Promise.all([rt('GET', '/runs/' + encodeURIComponent(id) + '/status'), rt('GET', '/runs/' + encodeURIComponent(id) + '/evidence'),
        rt('GET', '/runs/' + encodeURIComponent(id) + '/events?limit=200')]).then(function (all) {
        var st = all[0], ev = all[1], evs = all[2];
        var steps = (st.steps || []).map(function (s) {
          return el('tr', { 'data-step': String(s.index) }, [el('td', { text: String(s.index) }), el('td', {}, [el('code', { text: s.type })]), el('td', {}, [status(s.status)])]);
        });
        var events = (evs.items || []).map(function (e) {
          return el('tr', {}, [el('td', { text: when(e.timestamp) }), el('td', {}, [el('code', { text: e.event })])]);
        });
        box.replaceChildren(
          el('p', {}, ['Status: ', status(st.status), st.reason ? ' — ' + st.reason : '']),
          el('h3', { text: 'Steps' }),
          el('table', { id: 'steps' }, [el('thead', {}, [el('tr', {}, [el('th', { text: '#' }), el('th', { text: 'Type' }), el('th', { text: 'Status' })])]), el('tbody', {}, steps)]),
          el('h3', { text: 'Evidence' }),
          el('pre', { text: JSON.stringify({ counts: ev.counts, decisions: ev.decisions, effects: ev.effects, exceptions: ev.exceptions }, null, 2) }),
          el('h3', { text: 'Events' }),
          events.length ? el('table', {}, [el('tbody', {}, events)]) : el('p', { text: 'No events yet.' }));
        var ended = ['completed', 'failed', 'rejected', 'cancelled'].indexOf(st.status) >= 0;
        if (ended) stop();
      }, function (e) { stop(); fail(box, e); });
    }
    load();
    state.timer = setInterval(load, 1000);
  }

  function decisionRow(text, decide) {
    var note = el('input', { type: 'text', 'aria-label': 'Comment', placeholder: 'Comment (optional)' });
    var msg = el('div', { className: 'msg', role: 'status' });
    function go(ok) {
      decide(ok, note.value).then(function () { msg.className = 'msg good'; msg.textContent = ok ? 'Approved.' : 'Rejected.'; },
        function (e) { msg.className = 'msg bad'; msg.textContent = e.message; });
    }
    return el('div', {}, [el('p', { text: text }), el('div', { className: 'row' }, [note,
      el('button', { type: 'button', className: 'btn', text: 'Approve', onclick: function () { go(true); } }),
      el('button', { type: 'button', className: 'btn secondary', text: 'Reject', onclick: function () { go(false); } })]), msg]);
  }

  function tasks(view) {
    Promise.all([rt('GET', '/approvals?status=pending&limit=200'), rt('GET', '/forms/pending?limit=200')]).then(function (all) {
      var items = [];
      (all[0].items || []).forEach(function (a) {
        items.push(el('li', { className: 'card', 'data-kind': 'approval' }, [el('h3', { text: 'Approval for ' + a.approver_role + ' — run ' + a.run_id }),
          decisionRow(a.comment || '', function (ok, comment) { return rt('POST', '/approvals/' + encodeURIComponent(a.run_id) + '/' + a.step_id, { approved: ok, comment: comment }); })]));
      });
      (all[1].items || []).forEach(function (p) {
        items.push(el('li', { className: 'card', 'data-kind': 'form' }, [el('h3', { text: 'Form to fill — run ' + p.run_id + ', step ' + p.step_id }),
          el('p', { text: 'Expected: ' + (p.expected_keys || []).join(', ') + (p.expires_at ? '; open until ' + when(p.expires_at) : '') })]));
      });
      view.replaceChildren(el('h2', { text: 'Tasks' }), items.length ? el('ul', { style: 'list-style:none;padding:0' }, items) : el('p', { text: 'No pending task.' }));
    }, function (e) { fail(view, e); });
  }

  function tasksOfSession() {
    api('GET', '/sdk/tasks').then(function (page) {
      var items = (page.items || []).map(function (t) {
        if (t.kind === 'approval') {
          return el('li', { className: 'card', 'data-kind': 'approval' }, [el('h3', { text: 'Approval for ' + t.approver_role + ' — run ' + t.run_id }),
            decisionRow(t.comment || '', function (ok, comment) { return api('POST', '/sdk/tasks/' + encodeURIComponent(t.task_id) + '/decide', { approved: ok, comment: comment }); })]);
        }
        return el('li', { className: 'card', 'data-kind': 'form' }, [el('h3', { text: 'Form to fill — run ' + t.run_id + ', step ' + t.step_id })]);
      });
      app.replaceChildren(el('h2', { text: 'Your tasks' }), items.length ? el('ul', { style: 'list-style:none;padding:0' }, items) : el('p', { text: 'Nothing waits for you.' }));
    }, function (e) { fail(app, e); });
  }

  function deliveries(view) {
    rt('GET', '/webhooks?limit=100').then(function (hooks) {
      var list = hooks.items || [];
      if (!list.length) return view.replaceChildren(el('div', { className: 'card', text: 'No webhook is registered.' }));
      return Promise.all(list.map(function (h) { return rt('GET', '/webhooks/' + encodeURIComponent(h.id) + '/deliveries?limit=50').then(function (d) { return { hook: h, items: d.items || [] }; }); }))
        .then(function (groups) {
          view.replaceChildren.apply(view, groups.map(function (g) {
            var rows = g.items.map(function (d) {
              var detail = el('td', {}, [el('button', { type: 'button', className: 'btn secondary', text: 'Attempts', onclick: function () {
                rt('GET', '/deliveries/' + encodeURIComponent(d.delivery_id)).then(function (full) {
                  detail.replaceChildren(el('table', {}, [el('tbody', {}, (full.attempt_list || []).map(function (a) {
                    return el('tr', {}, [el('td', { text: '#' + a.n }), el('td', { text: when(a.at) }), el('td', {}, [status(a.outcome)]),
                      el('td', { text: a.status_code ? String(a.status_code) : '' }), el('td', { text: a.latency_ms + ' ms' }), el('td', { text: a.error || '' })]);
                  }))]));
                }, function (e) { fail(detail, e); });
              } })]);
              return el('tr', {}, [el('td', {}, [el('code', { text: d.delivery_id })]), el('td', { text: d.event }), el('td', {}, [status(d.status)]),
                el('td', { text: String(d.attempts) }), detail]);
            });
            return el('div', { className: 'card' }, [el('h2', { text: g.hook.url }), rows.length ? el('table', {}, [
              el('thead', {}, [el('tr', {}, [el('th', { text: 'Delivery' }), el('th', { text: 'Event' }), el('th', { text: 'Status' }), el('th', { text: 'Attempts' }), el('th', { text: '' })])]),
              el('tbody', {}, rows)]) : el('p', { text: 'No deliveries yet.' })]);
          }));
        });
    }).catch(function (e) { fail(view, e); });
  }

  render();
})();
