/*! svcflow browser SDK v1: forms, form pauses and tasks as web components. No build step. */
(function () {
  'use strict';
  if (window.SvcSDK) return;

  var cfg = { baseUrl: '', publishableKey: '' };
  var uid = 0;

  function base() { return (cfg.baseUrl || scriptBase || '').replace(/\/+$/, ''); }
  var autoDefine = !!(document.currentScript && document.currentScript.hasAttribute('data-auto-define'));
  var scriptBase = (function () {
    var s = document.currentScript;
    if (!s || !s.src) return '';
    try { return new URL(s.src).origin; } catch (e) { return ''; }
  })();

  // Sessions live in sessionStorage, one per base and scope (a publishable key, or a hosted form).
  function sessionKey(scope) { return 'svc-session:' + base() + ':' + scope; }
  function getSession(scope) {
    try { var v = JSON.parse(sessionStorage.getItem(sessionKey(scope)) || 'null'); return v && v.token ? v : null; } catch (e) { return null; }
  }
  function setSession(scope, v) { try { sessionStorage.setItem(sessionKey(scope), JSON.stringify(v)); } catch (e) { /* private mode */ } }
  function dropSession(scope) { try { sessionStorage.removeItem(sessionKey(scope)); } catch (e) { /* nothing */ } }

  function call(url, method, bearer, body) {
    var headers = { 'Accept': 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (bearer) headers['Authorization'] = 'Bearer ' + bearer;
    return fetch(url, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' })
      .then(function (r) {
        return r.text().then(function (t) {
          var data = null;
          try { data = t ? JSON.parse(t) : null; } catch (e) { data = null; }
          return { ok: r.ok, status: r.status, data: data, retryAfter: r.headers.get('Retry-After') };
        });
      }, function () { return { ok: false, status: 0, data: { detail: 'The service could not be reached. Check your connection and try again.' } }; });
  }

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (attrs[k] === undefined || attrs[k] === null || attrs[k] === false) continue;
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'className') e.className = attrs[k];
      else e.setAttribute(k, attrs[k] === true ? '' : attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return e;
  }

  // emit sends an event from target; it bubbles to document, so a listener there hears it
  // once. An element no longer in the page has no document above it: it goes there directly.
  function emit(target, name, detail) {
    target.dispatchEvent(new CustomEvent(name, { detail: detail, bubbles: true, composed: true }));
    if (target !== document && !target.isConnected) document.dispatchEvent(new CustomEvent(name, { detail: detail }));
  }

  // Sign-in boxes on show, by scope: a person who signs in in one element is signed in in
  // every element of the page that asked them to (sessionStorage's own event fires only in
  // other tabs).
  var waiting = [];
  function signedIn(scope, s) {
    setSession(scope, s);
    var now = waiting;
    waiting = [];
    now.forEach(function (w) {
      if (!w.box.isConnected) return;
      if (w.scope === scope) w.done(s); else waiting.push(w);
    });
  }

  var STYLE = '' +
    '.svc-form{font:inherit;color:inherit;max-width:40rem}' +
    '.svc-form fieldset{border:0;margin:0 0 1rem;padding:0}' +
    '.svc-form legend{font-weight:600;font-size:1.1em;margin-bottom:.5rem}' +
    '.svc-field{margin:0 0 1rem;display:flex;flex-direction:column;gap:.25rem}' +
    '.svc-field[hidden]{display:none}' +
    '.svc-field label,.svc-field .svc-label{font-weight:500}' +
    '.svc-field input,.svc-field select,.svc-field textarea{font:inherit;padding:.5rem;border:1px solid #8a8f98;border-radius:6px;background:inherit;color:inherit}' +
    '.svc-field input[type=checkbox]{width:auto}' +
    '.svc-field [aria-invalid=true]{border-color:#c62828;outline-color:#c62828}' +
    '.svc-help{font-size:.9em;opacity:.8}' +
    '.svc-error{color:#c62828;font-size:.9em}' +
    '.svc-error:empty{display:none}' +
    '.svc-req{color:#c62828}' +
    '.svc-display{padding:.5rem;border:1px dashed #8a8f98;border-radius:6px;opacity:.85}' +
    '.svc-actions{display:flex;gap:.5rem;align-items:center}' +
    '.svc-btn{font:inherit;padding:.55rem 1.1rem;border-radius:6px;border:1px solid var(--svc-accent,#2457c5);background:var(--svc-accent,#2457c5);color:#fff;cursor:pointer}' +
    '.svc-btn.svc-secondary{background:transparent;color:var(--svc-accent,#2457c5)}' +
    '.svc-btn:focus-visible,.svc-field :focus-visible{outline:3px solid var(--svc-accent,#2457c5);outline-offset:2px}' +
    '.svc-btn[disabled]{opacity:.6;cursor:progress}' +
    '.svc-status{margin:.5rem 0;padding:.6rem .8rem;border-radius:6px}' +
    '.svc-status:empty{display:none}' +
    '.svc-status.svc-bad{background:rgba(198,40,40,.12)}' +
    '.svc-status.svc-good{background:rgba(46,125,50,.14)}' +
    '.svc-tasks{list-style:none;margin:0;padding:0}' +
    '.svc-task{border:1px solid #8a8f98;border-radius:8px;padding:.75rem;margin:0 0 .75rem}' +
    '.svc-task h3{margin:0 0 .25rem;font-size:1em}' +
    '.svc-range{display:flex;gap:.5rem;align-items:center}';
  function injectStyle() {
    if (document.getElementById('svc-sdk-style')) return;
    var s = el('style', { id: 'svc-sdk-style' });
    s.textContent = STYLE;
    (document.head || document.documentElement).appendChild(s);
  }

  var DISPLAY_ONLY = { content: 1, file: 1, signature: 1, table: 1, lookup: 1, computed: 1 };
  var KNOWN = { text: 1, multiline: 1, number: 1, money: 1, range: 1, email: 1, date: 1, select: 1, checklist: 1 };

  // checkSchema says why a schema cannot be rendered ('' when it can).
  function checkSchema(schema) {
    if (!schema || typeof schema !== 'object') return 'The form has no schema.';
    if (schema.version !== 'form_schema_v1') return 'The form uses a schema version this page cannot show (' + (schema.version || 'none') + ').';
    if (!Array.isArray(schema.pages) || schema.pages.length === 0) return 'The form has no pages.';
    for (var i = 0; i < schema.pages.length; i++) {
      var p = schema.pages[i];
      if (!p || !Array.isArray(p.fields)) return 'A page of the form has no fields.';
      for (var j = 0; j < p.fields.length; j++) {
        var f = p.fields[j];
        if (!f || !f.key || !(KNOWN[f.type] || DISPLAY_ONLY[f.type])) return 'The form has a field this page cannot show (' + (f && f.type) + ').';
      }
    }
    return '';
  }

  // renderFields builds the inputs of a schema into form; returns the field list.
  function renderFields(form, schema, values) {
    var fields = [];
    schema.pages.forEach(function (page) {
      var fs = el('fieldset', {});
      if (page.title) fs.appendChild(el('legend', { text: page.title }));
      if (page.description) fs.appendChild(el('p', { className: 'svc-help', text: page.description }));
      page.fields.forEach(function (f) {
        var id = 'svc-f-' + (++uid);
        var wrap = el('div', { className: 'svc-field', 'data-key': f.key });
        var err = el('span', { className: 'svc-error', id: id + '-err' });
        var help = f.help ? el('span', { className: 'svc-help', id: id + '-help', text: f.help }) : null;
        var described = [help ? id + '-help' : '', id + '-err'].join(' ').trim();
        var v = values && Object.prototype.hasOwnProperty.call(values, f.key) ? values[f.key] : f.default;
        var input = null;
        if (f.type === 'content') {
          wrap.appendChild(el('p', { text: f.label }));
          fs.appendChild(wrap);
          return;
        }
        if (DISPLAY_ONLY[f.type]) {
          wrap.appendChild(el('span', { className: 'svc-label', text: f.label }));
          wrap.appendChild(el('div', { className: 'svc-display', text: f.type === 'computed' || f.type === 'lookup' ? 'Filled in for you.' : 'Shown for information; nothing to fill in here.' }));
          if (help) wrap.appendChild(help);
          fs.appendChild(wrap);
          return;
        }
        var label = el('label', { 'for': id }, [f.label || f.key]);
        if (f.required) label.appendChild(el('span', { className: 'svc-req', 'aria-hidden': 'true', text: ' *' }));
        var common = { id: id, name: f.key, 'aria-describedby': described, required: !!f.required, 'aria-required': f.required ? 'true' : undefined };
        switch (f.type) {
          case 'multiline':
            input = el('textarea', Object.assign({ rows: 4, placeholder: f.placeholder }, common));
            if (v != null) input.value = String(v);
            break;
          case 'select':
            input = el('select', Object.assign({ multiple: !!f.multiple }, common));
            if (!f.multiple) input.appendChild(el('option', { value: '', text: f.placeholder || 'Choose…' }));
            (f.options || []).forEach(function (o) {
              var opt = el('option', { value: o.value, text: o.label || o.value });
              if (Array.isArray(v) ? v.indexOf(o.value) >= 0 : v === o.value) opt.selected = true;
              input.appendChild(opt);
            });
            break;
          case 'checklist':
            input = el('div', { id: id, role: 'group', 'aria-labelledby': id + '-lbl', 'aria-describedby': described });
            label = el('span', { className: 'svc-label', id: id + '-lbl' }, [f.label || f.key]);
            if (f.required) label.appendChild(el('span', { className: 'svc-req', 'aria-hidden': 'true', text: ' *' }));
            (f.options || []).forEach(function (o, i) {
              var cid = id + '-' + i;
              var cb = el('input', { type: 'checkbox', id: cid, name: f.key, value: o.value });
              if (Array.isArray(v) && v.indexOf(o.value) >= 0) cb.checked = true;
              input.appendChild(el('div', {}, [cb, ' ', el('label', { 'for': cid, text: o.label || o.value })]));
            });
            break;
          default:
            var type = { email: 'email', date: 'date', number: 'number', money: 'number', range: 'range' }[f.type] || (f.masked ? 'password' : 'text');
            input = el('input', Object.assign({ type: type, placeholder: f.placeholder, min: f.min, max: f.max, step: f.step != null ? f.step : (f.type === 'money' ? '0.01' : (f.type === 'number' ? 'any' : undefined)), autocomplete: f.type === 'email' ? 'email' : undefined }, common));
            if (v != null) input.value = String(v);
        }
        wrap.appendChild(label);
        if (f.type === 'money' && f.unit) {
          wrap.appendChild(el('div', { className: 'svc-range' }, [el('span', { text: f.unit }), input]));
        } else if (f.type === 'range') {
          var out = el('output', { 'for': id, text: input.value });
          input.addEventListener('input', function () { out.textContent = input.value + (f.unit ? ' ' + f.unit : ''); });
          wrap.appendChild(el('div', { className: 'svc-range' }, [input, out]));
        } else {
          wrap.appendChild(input);
        }
        if (help) wrap.appendChild(help);
        wrap.appendChild(err);
        fs.appendChild(wrap);
        fields.push({ f: f, input: input, err: err, wrap: wrap });
      });
      form.appendChild(fs);
    });
    return fields;
  }

  function valueOf(x) {
    var f = x.f, input = x.input;
    if (f.type === 'checklist') {
      return Array.prototype.slice.call(input.querySelectorAll('input:checked')).map(function (c) { return c.value; });
    }
    if (f.type === 'select' && f.multiple) {
      return Array.prototype.slice.call(input.selectedOptions).map(function (o) { return o.value; });
    }
    var s = input.value;
    if (f.type === 'number' || f.type === 'money' || f.type === 'range') return s.trim() === '' ? null : Number(s);
    return s;
  }

  function empty(v) { return v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0); }

  // validate returns {key: message} for what is wrong before anything is sent.
  function validate(fields) {
    var errs = {};
    fields.forEach(function (x) {
      var f = x.f, v = valueOf(x);
      if (empty(v)) { if (f.required) errs[f.key] = 'Required.'; return; }
      if (f.type === 'email' && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(v)) errs[f.key] = 'Enter an email address, like name@example.com.';
      if (f.type === 'date' && !/^\d{4}-\d{2}-\d{2}$/.test(v)) errs[f.key] = 'Enter a date (YYYY-MM-DD).';
      if (typeof v === 'number') {
        if (isNaN(v)) errs[f.key] = 'Enter a number.';
        else if (f.min != null && v < f.min) errs[f.key] = 'At least ' + f.min + '.';
        else if (f.max != null && v > f.max) errs[f.key] = 'At most ' + f.max + '.';
      }
    });
    return errs;
  }

  function showErrors(fields, errs, status) {
    var first = null, n = 0;
    fields.forEach(function (x) {
      var m = errs[x.f.key] || '';
      x.err.textContent = m;
      var target = x.f.type === 'checklist' ? x.input.querySelector('input') : x.input;
      if (m) { n++; x.input.setAttribute('aria-invalid', 'true'); if (!first) first = target; } else x.input.removeAttribute('aria-invalid');
    });
    if (n) {
      setStatus(status, n === 1 ? 'One field needs attention.' : n + ' fields need attention.', 'bad');
      if (first) first.focus();
    }
    return n;
  }

  function setStatus(node, text, kind) {
    node.textContent = text || '';
    node.className = 'svc-status' + (kind ? ' svc-' + kind : '');
  }

  // errorsByField maps a problem's located errors to field keys (pointer /key or /data/key).
  function errorsByField(problem, keys) {
    var out = {}, rest = [];
    ((problem && problem.errors) || []).forEach(function (e) {
      var p = (e.pointer || e.location || '').replace(/^body\.?/, '/').split(/[\/.]/).filter(Boolean);
      if (p[0] === 'data') p.shift();
      if (p.length && keys.indexOf(p[0]) >= 0) out[p[0]] = e.message;
      else rest.push(e.message);
    });
    return { byField: out, rest: rest };
  }

  function retryText(res) {
    var secs = parseInt(res.retryAfter || '', 10);
    return 'Too many attempts from your address for now.' + (secs ? ' Try again in ' + secs + ' s.' : ' Try again in a minute.');
  }

  var EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

  // signInFlow asks for an email, then the code mailed to it; done(session) when the person
  // signs in here or in another element of the same scope (opts.scope). It takes the focus
  // only when opts.focus (the person asked for it: a submit that needs a sign-in), never
  // when a page loads.
  function signInFlow(host, opts, done) {
    var box = el('form', { className: 'svc-form', novalidate: true, 'aria-label': 'Sign in' });
    var status = el('div', { className: 'svc-status', role: 'status', 'aria-live': 'polite' });
    var emailId = 'svc-f-' + (++uid), codeId = 'svc-f-' + (++uid);
    var emailErr = el('span', { className: 'svc-error', id: emailId + '-err' });
    var email = el('input', { id: emailId, type: 'email', name: 'email', autocomplete: 'email', required: true, 'aria-required': 'true', 'aria-describedby': emailId + '-err' });
    var code = el('input', { id: codeId, type: 'text', name: 'code', inputmode: 'numeric', autocomplete: 'one-time-code', pattern: '[0-9]{6}', maxlength: '6' });
    var codeWrap = el('div', { className: 'svc-field', hidden: true }, [el('label', { 'for': codeId, text: 'The 6-digit code we sent you' }), code]);
    var btn = el('button', { type: 'submit', className: 'svc-btn', text: 'Send me a code' });
    box.appendChild(el('p', { text: opts.intro || 'Sign in with your email to continue.' }));
    box.appendChild(el('div', { className: 'svc-field' }, [el('label', { 'for': emailId, text: 'Email' }), email, emailErr]));
    box.appendChild(codeWrap);
    box.appendChild(status);
    box.appendChild(el('div', { className: 'svc-actions' }, [btn]));
    var sent = false;
    var emailProblem = function (msg) {
      emailErr.textContent = msg;
      if (msg) email.setAttribute('aria-invalid', 'true'); else email.removeAttribute('aria-invalid');
      if (msg) { setStatus(status, 'Email: ' + msg, 'bad'); email.focus(); }
    };
    box.addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (!sent) {
        var typed = email.value.trim();
        emailProblem(!typed ? 'Enter your email address: the code is sent there.' : (EMAIL.test(typed) ? '' : 'Enter an email address, like name@example.com.'));
        if (emailErr.textContent) return;
      }
      btn.disabled = true;
      var req = sent ? call(opts.verifyUrl, 'POST', opts.bearer, { email: email.value.trim(), code: code.value.trim() })
        : call(opts.startUrl, 'POST', opts.bearer, { email: email.value.trim() });
      req.then(function (res) {
        btn.disabled = false;
        if (!res.ok) {
          // A 422 names the field and why ({errors: [{pointer: "/email", message}]}): say that,
          // not the bare "validation failed".
          var m = res.status === 422 ? errorsByField(res.data, ['email', 'code']) : { byField: {}, rest: [] };
          if (!sent && m.byField.email) return emailProblem(m.byField.email);
          var why = m.byField.code ? 'Code: ' + m.byField.code : m.rest.join(' ');
          setStatus(status, res.status === 429 ? retryText(res) : why || (res.data && res.data.detail) || 'That did not work.', 'bad');
          (sent ? code : email).focus();
          return;
        }
        if (!sent) {
          sent = true;
          codeWrap.hidden = false;
          email.readOnly = true;
          btn.textContent = 'Sign in';
          // The same words whoever asks: the gateway does not tell who may sign in.
          setStatus(status, 'If ' + email.value.trim() + ' may sign in here, a code is on its way. It works for 10 minutes.', 'good');
          code.focus();
          return;
        }
        var s = { token: res.data.session_token, email: res.data.email, permissions: res.data.permissions };
        if (opts.scope) signedIn(opts.scope, s); else done(s);
      });
    });
    host.replaceChildren(box);
    if (opts.scope) waiting.push({ scope: opts.scope, box: box, done: done });
    if (opts.focus) email.focus();
  }

  class SvcForm extends HTMLElement {
    connectedCallback() {
      if (this._started) return;
      this._started = true;
      injectStyle();
      this.load();
    }
    get publicBase() { return (this.getAttribute('public-base') || base()).replace(/\/+$/, ''); }
    load() {
      var self = this;
      var formId = this.getAttribute('form-id');
      var runId = this.getAttribute('run-id'), stepId = this.getAttribute('step-id');
      var preloaded = this.querySelector('script[type="application/json"]');
      if (formId) {
        this.mode = 'public';
        if (preloaded) {
          try { return this.showPublic(JSON.parse(preloaded.textContent)); } catch (e) { /* fetch it */ }
        }
        this.message('Loading…');
        call(this.publicBase + '/forms/public/' + encodeURIComponent(formId), 'GET').then(function (res) {
          if (!res.ok) return self.message(res.status === 404 ? 'This form does not exist or is not public.' : ((res.data && res.data.detail) || 'The form could not be loaded.'), 'bad');
          self.showPublic(res.data);
        });
        return;
      }
      if (runId && stepId !== null) {
        this.mode = 'pause';
        this.scope = 'pk:' + cfg.publishableKey;
        var sess = getSession(this.scope);
        this.message('Loading…');
        call(base() + '/sdk/forms/run/' + encodeURIComponent(runId) + '/' + encodeURIComponent(stepId), 'GET', sess ? sess.token : cfg.publishableKey).then(function (res) {
          if (!res.ok) return self.message(res.status === 404 ? 'This form was not found.' : ((res.data && res.data.detail) || 'The form could not be loaded.'), 'bad');
          var p = res.data;
          if (p.status !== 'open') return self.message(p.status === 'submitted' ? 'This form was already submitted' + (p.claimed_by ? ' by ' + p.claimed_by : '') + '.' : 'This form is ' + p.status + ' and takes no answers.', p.status === 'submitted' ? 'good' : 'bad');
          self.pause = p;
          self.renderForm(p.schema);
        });
        return;
      }
      var inline = this.getAttribute('schema');
      if (inline) {
        this.mode = 'inline';
        try { return this.renderForm(JSON.parse(inline)); } catch (e) { return this.message('The form\'s schema is not valid JSON.', 'bad'); }
      }
      this.message('This element needs form-id, or run-id and step-id.', 'bad');
    }
    message(text, kind) {
      var p = el('div', { className: 'svc-status' + (kind ? ' svc-' + kind : ''), role: kind === 'bad' ? 'alert' : 'status', text: text });
      this.replaceChildren(p);
    }
    showPublic(form) {
      this.form = form;
      this.scope = 'form:' + form.id;
      if (!form.open) return this.message('This form is closed: it no longer takes submissions.', 'bad');
      if (form.settings && form.settings.requireAuth && !getSession(this.scope)) return this.signIn();
      this.renderForm(form.schema);
    }
    signIn(values) {
      var self = this;
      var opts = this.mode === 'public'
        ? { startUrl: this.publicBase + '/forms/public/' + encodeURIComponent(this.form.id) + '/auth/start', verifyUrl: this.publicBase + '/forms/public/' + encodeURIComponent(this.form.id) + '/auth/verify', intro: 'This form asks you to sign in with your email first.' }
        : { startUrl: base() + '/sdk/auth/start', verifyUrl: base() + '/sdk/auth/verify', bearer: cfg.publishableKey, intro: 'Sign in with your email to submit this form.' };
      opts.scope = this.scope;
      opts.focus = values !== undefined; // asked for by a submit, not by the page loading
      signInFlow(this, opts, function () {
        self.renderForm(self.mode === 'public' ? self.form.schema : self.pause.schema, values);
      });
    }
    renderForm(schema, values) {
      var self = this;
      var why = checkSchema(schema);
      if (why) return this.message(why, 'bad');
      // A page may hold several forms (a task list): a pause's form names its run and step,
      // and a page may name an inline schema's form (form-label), so each landmark has a
      // name of its own.
      var paused = this.getAttribute('run-id') ? ' of run ' + this.getAttribute('run-id') + ', step ' + this.getAttribute('step-id') : '';
      var name = (this.form && this.form.name) || schema.title || this.getAttribute('form-label') || 'Form';
      var form = el('form', { className: 'svc-form', novalidate: true, 'aria-label': name + paused });
      if (schema.title && !(this.form && this.form.name === schema.title)) form.appendChild(el('h2', { text: schema.title }));
      if (schema.description) form.appendChild(el('p', { className: 'svc-help', text: schema.description }));
      var fields = renderFields(form, schema, values);
      var status = el('div', { className: 'svc-status', role: 'alert', 'aria-live': 'assertive' });
      var btn = el('button', { type: 'submit', className: 'svc-btn', text: this.getAttribute('submit-text') || 'Submit' });
      form.appendChild(status);
      form.appendChild(el('div', { className: 'svc-actions' }, [btn]));
      form.addEventListener('submit', function (ev) {
        ev.preventDefault();
        var errs = validate(fields);
        if (showErrors(fields, errs, status)) return;
        setStatus(status, '');
        var data = {};
        fields.forEach(function (x) { var v = valueOf(x); if (!empty(v)) data[x.f.key] = v; });
        btn.disabled = true;
        self.send(data).then(function (res) {
          btn.disabled = false;
          self.answered(res, data, fields, status);
        });
      });
      this.replaceChildren(form);
      if (window.performance && performance.mark) performance.mark('svc-form:rendered');
    }
    send(data) {
      // A page that submits on its own (the console) sets element.sender = function (data)
      // -> Promise<{ok, status, data}>: the same fields, checks and error display.
      if (typeof this.sender === 'function') return this.sender(data);
      var sess = getSession(this.scope);
      if (this.mode === 'public') {
        return call(this.publicBase + '/forms/public/' + encodeURIComponent(this.form.id) + '/submit', 'POST', sess && sess.token, data);
      }
      if (this.mode === 'pause') {
        if (!sess) return Promise.resolve({ ok: false, status: 403, data: { code: 'signin_required' } });
        return call(base() + '/sdk/forms/run/' + encodeURIComponent(this.getAttribute('run-id')) + '/' + encodeURIComponent(this.getAttribute('step-id')) + '/submit', 'POST', sess.token, { data: data });
      }
      return Promise.resolve({ ok: true, status: 200, data: { data: data } });
    }
    answered(res, data, fields, status) {
      var d = res.data || {};
      if (res.ok) {
        var detail = { formId: this.getAttribute('form-id'), runId: this.getAttribute('run-id') || d.triggered_run_id || null, stepId: this.getAttribute('step-id'), submissionId: d.submission_id || d.submission_id, data: data, result: d };
        emit(this, 'svc-form:submitted', detail);
        emit(this, 'form:submitted', detail);
        if (d.redirect_url) { window.location.assign(d.redirect_url); return; }
        this.message(this.getAttribute('done-text') || d.success_message || 'Thank you: your answers were sent.', 'good');
        return;
      }
      if (res.status === 401 && d.code === 'form_signin_required' || res.status === 403 && d.code === 'signin_required' ||
          res.status === 401 && (d.code === 'unknown_session' || d.code === 'session_expired' || d.code === 'session_ended')) {
        dropSession(this.scope);
        return this.signIn(data);
      }
      if (res.status === 422) {
        var m = errorsByField(d, fields.map(function (x) { return x.f.key; }));
        if (!showErrors(fields, m.byField, status)) setStatus(status, m.rest.join(' ') || d.detail || 'The answers were not accepted.', 'bad');
        return;
      }
      if (res.status === 429) return setStatus(status, retryText(res), 'bad');
      if (res.status === 410) return this.message('This form has expired: it no longer takes submissions.', 'bad');
      if (res.status === 409) return this.message('This form was already submitted.', 'bad');
      setStatus(status, d.detail || 'The answers could not be sent. Try again.', 'bad');
    }
  }

  class SvcFormButton extends HTMLElement {
    connectedCallback() {
      if (this._started) return;
      this._started = true;
      injectStyle();
      var self = this;
      var b = el('button', { type: 'button', className: 'svc-btn', text: this.textContent.trim() || 'Open the form' });
      b.addEventListener('click', function () {
        var id = self.getAttribute('form-id');
        var href = self.getAttribute('href') || ((self.getAttribute('public-base') || base()) + '/forms/' + encodeURIComponent(id));
        window.open(href, self.getAttribute('target') || '_blank', 'noopener');
      });
      this.replaceChildren(b);
    }
  }

  class SvcTaskSidebar extends HTMLElement {
    connectedCallback() {
      if (this._started) return;
      this._started = true;
      injectStyle();
      this.scope = 'pk:' + cfg.publishableKey;
      this.seen = null;
      var self = this;
      var sess = getSession(this.scope);
      if (!sess) {
        return signInFlow(this, { startUrl: base() + '/sdk/auth/start', verifyUrl: base() + '/sdk/auth/verify', bearer: cfg.publishableKey, intro: 'Sign in with your email to see your tasks.', scope: this.scope }, function () {
          self.start();
        });
      }
      this.start();
    }
    disconnectedCallback() { clearInterval(this.timer); }
    start() {
      var self = this;
      this.replaceChildren(el('h2', { text: this.getAttribute('heading') || 'Your tasks' }), this.list = el('ul', { className: 'svc-tasks', 'aria-live': 'polite' }), this.status = el('div', { className: 'svc-status', role: 'status' }));
      this.refresh();
      var every = Math.max(1, parseFloat(this.getAttribute('poll-seconds') || '5'));
      this.timer = setInterval(function () { self.refresh(); }, every * 1000);
    }
    refresh() {
      var self = this;
      var sess = getSession(this.scope);
      if (!sess) return;
      call(base() + '/sdk/tasks', 'GET', sess.token).then(function (res) {
        if (!res.ok) {
          if (res.status === 401) { dropSession(self.scope); clearInterval(self.timer); self._started = false; self.connectedCallback(); }
          return setStatus(self.status, (res.data && res.data.detail) || 'Tasks could not be loaded.', 'bad');
        }
        setStatus(self.status, '');
        var items = res.data.items || [];
        var first = self.seen === null;
        var seen = {};
        items.forEach(function (t) {
          seen[t.task_id] = true;
          if (!first && !(self.seen[t.task_id])) emit(self, 'task:created', { taskId: t.task_id, kind: t.kind, runId: t.run_id, stepId: t.step_id });
        });
        self.seen = seen;
        self.render(items);
      });
    }
    render(items) {
      // Keyed by task: an item already shown stays as it is (a comment being typed, a form
      // being filled, a decision's answer), new ones are added in order, gone ones removed.
      var self = this;
      var have = {};
      Array.prototype.forEach.call(this.list.children, function (li) { if (li.dataset.taskId) have[li.dataset.taskId] = li; else li.remove(); });
      var want = {};
      items.forEach(function (t) { want[t.task_id] = true; });
      Object.keys(have).forEach(function (id) { if (!want[id] && !have[id].dataset.busy) have[id].remove(); });
      if (!items.length && !this.list.children.length) { this.list.appendChild(el('li', { text: 'Nothing waits for you.' })); return; }
      var prev = null;
      items.forEach(function (t) {
        var li = have[t.task_id];
        if (!li) li = self.item(t);
        if (prev) prev.after(li); else self.list.prepend(li);
        prev = li;
      });
    }
    item(t) {
      var self = this;
      var li = el('li', { className: 'svc-task', 'data-task-id': t.task_id, 'data-kind': t.kind });
      if (t.kind === 'approval') {
        li.appendChild(el('h3', { text: 'Approval for ' + t.approver_role }));
        if (t.comment) li.appendChild(el('p', { text: t.comment }));
        var note = el('input', { type: 'text', 'aria-label': 'Comment (optional)', placeholder: 'Comment (optional)' });
        var yes = el('button', { type: 'button', className: 'svc-btn', text: 'Approve' });
        var no = el('button', { type: 'button', className: 'svc-btn svc-secondary', text: 'Reject' });
        var st = el('div', { className: 'svc-status', role: 'status' });
        var decide = function (ok) {
          yes.disabled = no.disabled = true;
          li.dataset.busy = '1';
          call(base() + '/sdk/tasks/' + encodeURIComponent(t.task_id) + '/decide', 'POST', getSession(self.scope).token, { approved: ok, comment: note.value }).then(function (res) {
            if (res.ok) {
              setStatus(st, ok ? 'Approved.' : 'Rejected.', 'good');
              emit(self, 'task:decided', { taskId: t.task_id, approved: ok });
              setTimeout(function () { delete li.dataset.busy; self.refresh(); }, 1500);
              return;
            }
            delete li.dataset.busy;
            yes.disabled = no.disabled = false;
            setStatus(st, (res.data && res.data.detail) || 'The decision was not recorded.', 'bad');
          });
        };
        yes.addEventListener('click', function () { decide(true); });
        no.addEventListener('click', function () { decide(false); });
        li.appendChild(el('div', { className: 'svc-field' }, [note]));
        li.appendChild(el('div', { className: 'svc-actions' }, [yes, no]));
        li.appendChild(st);
        return li;
      }
      li.appendChild(el('h3', { text: 'Form to fill' }));
      li.appendChild(el('p', { className: 'svc-help', text: 'Run ' + t.run_id + ', step ' + t.step_id + (t.expires_at ? ', open until ' + new Date(t.expires_at).toLocaleString() : '') }));
      var openBtn = el('button', { type: 'button', className: 'svc-btn', text: 'Open' });
      openBtn.addEventListener('click', function () {
        var f = el('svc-form', { 'run-id': t.run_id, 'step-id': String(t.step_id) });
        li.dataset.busy = '1';
        f.addEventListener('svc-form:submitted', function () { setTimeout(function () { delete li.dataset.busy; self.refresh(); }, 1500); });
        li.replaceChildren(el('h3', { text: 'Form to fill' }), f);
      });
      li.appendChild(openBtn);
      return li;
    }
  }

  function defineFormElements() {
    if (!customElements.get('svc-form')) customElements.define('svc-form', SvcForm);
    if (!customElements.get('svc-form-button')) customElements.define('svc-form-button', SvcFormButton);
    if (!customElements.get('svc-task-sidebar')) customElements.define('svc-task-sidebar', SvcTaskSidebar);
    var scan = function () {
      Array.prototype.forEach.call(document.querySelectorAll('[data-svc-form]'), function (host) {
        if (host.querySelector('svc-form')) return;
        var f = el('svc-form', { 'form-id': host.getAttribute('data-svc-form'), 'public': host.hasAttribute('data-svc-form-public') });
        host.appendChild(f);
      });
    };
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', scan); else scan();
  }

  window.SvcSDK = {
    version: 1,
    init: function (o) {
      o = o || {};
      cfg.baseUrl = o.baseUrl || cfg.baseUrl;
      cfg.publishableKey = o.publishableKey || cfg.publishableKey;
      defineFormElements();
      return window.SvcSDK;
    },
    defineFormElements: defineFormElements,
    signOut: function () {
      var s = getSession('pk:' + cfg.publishableKey);
      dropSession('pk:' + cfg.publishableKey);
      if (s) return call(base() + '/sdk/auth/signout', 'POST', s.token);
      return Promise.resolve();
    },
    session: function () { return getSession('pk:' + cfg.publishableKey); },
    on: function (name, fn) { document.addEventListener(name, fn); }
  };
  // A hosted page's logo that cannot load is hidden rather than shown broken; the brand's
  // name beside it stays (the page is the gateway's: its CSP allows no inline handler).
  function hideBrokenLogos() {
    Array.prototype.forEach.call(document.querySelectorAll('img[data-svc-logo]'), function (img) {
      var hide = function () { img.hidden = true; };
      if (img.complete && img.naturalWidth === 0) hide(); else img.addEventListener('error', hide);
    });
  }
  if (autoDefine) {
    defineFormElements();
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', hideBrokenLogos); else hideBrokenLogos();
  }
})();
