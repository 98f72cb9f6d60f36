/**
 * The dashboard page: HTML, style and script served by the operator (server.ts). No build step
 * and no external assets (air-gapped clusters). The script builds the page with DOM calls and
 * sets every string from the cluster as text (textContent, or an attribute value), never as
 * HTML, and the Content-Security-Policy allows only these same-origin files: a host name or
 * condition message carrying markup shows as text.
 *
 * Live: the page listens to /api/stream (server-sent events) and redraws on each overview; when
 * the stream fails for good (the operator restarted, the client limit) it connects again with
 * a growing delay, and without EventSource it polls /api/overview.
 * @package
 */
export const dashboardHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>winfleet</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="dashboard.css">
<script src="dashboard.js" defer></script>
</head>
<body>
<header class="top">
  <h1>winfleet</h1>
  <div id="summary" class="summary">loading…</div>
  <div id="conn" class="conn" role="status">connecting…</div>
</header>
<main>
  <section>
    <h2>Windows hosts</h2>
    <table id="hosts" class="grid">
      <thead><tr><th>Host</th><th>Pool</th><th>Node</th><th>Windows</th><th>Kubelet</th><th>Services</th><th>Conditions</th><th>State</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <div class="two">
    <section>
      <h2>Pools and rollouts</h2>
      <table id="pools" class="grid">
        <thead><tr><th>Pool</th><th>Hosts</th><th>Ready</th><th>Updated</th><th>Unavailable</th><th>State</th><th>In progress</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
    <section>
      <h2>RuntimeClasses</h2>
      <table id="rcs" class="grid">
        <thead><tr><th>Name</th><th>Handler</th><th>Windows build</th><th>Owner</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
  </div>
  <section>
    <h2>Nodes</h2>
    <table id="nodes" class="grid">
      <thead><tr><th>Node</th><th>OS</th><th>Kernel</th><th>Kubelet</th><th>Services (applied / wanted)</th><th>Ready</th><th>Schedulable</th><th>Problems</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
</main>
<aside id="detail" class="detail" hidden aria-labelledby="detail-title">
  <div class="detail-head">
    <h2 id="detail-title"></h2>
    <button type="button" id="detail-close" aria-label="Close">×</button>
  </div>
  <div id="detail-body" class="detail-body"></div>
</aside>
</body>
</html>
`;

/** @package */
export const dashboardCss = `
:root { --fg: #1d232a; --muted: #5b6470; --line: #e3e6ea; --head: #f5f7f9;
  --ok: #137333; --okbg: #e6f4ea; --warn: #8a5a00; --warnbg: #fef3d6; --bad: #b3261e; --badbg: #fce8e6; }
* { box-sizing: border-box; }
body { font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: var(--fg); background: #fff; }
header.top { display: flex; align-items: baseline; gap: 1rem; padding: .6rem 1rem; border-bottom: 1px solid var(--line); background: var(--head); position: sticky; top: 0; z-index: 1; }
h1 { font-size: 1.15rem; margin: 0; }
h2 { font-size: .95rem; margin: 1rem 0 .35rem; }
.summary { color: var(--muted); flex: 1; }
.conn { font-size: .8rem; color: var(--muted); }
.conn.live::before { content: "● "; color: var(--ok); }
.conn.down::before { content: "● "; color: var(--bad); }
main { padding: 0 1rem 1rem; }
.two { display: grid; grid-template-columns: 3fr 2fr; gap: 1rem; }
table.grid { border-collapse: collapse; width: 100%; }
.grid th, .grid td { text-align: left; padding: .25rem .45rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.grid th { font-weight: 600; background: var(--head); white-space: nowrap; }
#hosts tbody tr { cursor: pointer; }
#hosts tbody tr:hover, #hosts tbody tr.selected { background: #eef3fb; }
.muted { color: var(--muted); }
.small { font-size: .85em; }
.nowrap { white-space: nowrap; }
.ok { color: var(--ok); font-weight: 600; } .warn { color: var(--warn); font-weight: 600; } .bad { color: var(--bad); font-weight: 600; }
.badge { display: inline-block; padding: 0 .35rem; margin: 0 .2rem .15rem 0; border-radius: .6rem; font-size: .78rem; border: 1px solid transparent; white-space: nowrap; }
.badge.ok { background: var(--okbg); color: var(--ok); font-weight: 500; }
.badge.warn { background: var(--warnbg); color: var(--warn); font-weight: 500; }
.badge.bad { background: var(--badbg); color: var(--bad); font-weight: 600; }
.badge.none { background: var(--head); color: var(--muted); }
td.msg { max-width: 26rem; overflow-wrap: anywhere; }
.clip { display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; }
.detail { position: fixed; top: 0; right: 0; bottom: 0; width: min(46rem, 62vw); background: #fff; border-left: 1px solid var(--line); box-shadow: -6px 0 18px rgba(0,0,0,.12); display: flex; flex-direction: column; z-index: 2; }
.detail[hidden] { display: none; }
.detail-head { display: flex; align-items: center; gap: .5rem; padding: .5rem 1rem; border-bottom: 1px solid var(--line); background: var(--head); }
.detail-head h2 { margin: 0; flex: 1; overflow-wrap: anywhere; }
.detail-head button { font-size: 1.2rem; line-height: 1; border: 1px solid var(--line); background: #fff; border-radius: 4px; cursor: pointer; padding: .1rem .5rem; }
.detail-body { overflow: auto; padding: 0 1rem 1rem; }
.detail-body h3 { font-size: .9rem; margin: .9rem 0 .3rem; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .8rem; margin: 0; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; overflow-wrap: anywhere; }
.error { color: var(--bad); }
`;

/** Plain browser JavaScript (no template literals inside: this is a TypeScript template). */
export const dashboardScript = `'use strict';
(function () {
  // detailRowJson: the open host's overview row (JSON) that the detail shows or is loading; a
  // new overview refetches the detail only when that row differs (the detail's host is the row).
  var state = { overview: null, detailKey: null, detailRowJson: null, detailTimer: null, es: null, retryMs: 1000 };

  // Builds an element; strings become text nodes, never HTML.
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = String(v);
        else if (k === 'onclick') e.addEventListener('click', v);
        else e.setAttribute(k, String(v));
      });
    }
    add(e, children);
    return e;
  }
  function add(e, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === undefined || c === null || c === false || c === '') return;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
  }
  function ago(iso) {
    if (!iso) return '';
    var s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
    if (!isFinite(s)) return '';
    if (s < 0) s = 0;
    if (s < 90) return s + 's ago';
    if (s < 5400) return Math.round(s / 60) + 'm ago';
    if (s < 129600) return Math.round(s / 3600) + 'h ago';
    return Math.round(s / 86400) + 'd ago';
  }
  function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : 's'); }
  function when(iso) { return iso ? el('span', { title: iso, class: 'nowrap', text: ago(iso) }) : ''; }
  function badge(c, label) {
    var tip = c.status + (c.reason ? ' · ' + c.reason : '') + (c.message ? ': ' + c.message : '') + (c.since ? ' (since ' + c.since + ')' : '');
    return el('span', { class: 'badge ' + c.tone, title: tip, 'data-condition': c.type, text: label || c.type });
  }
  function fill(id, items, render, cols) {
    var body = document.querySelector('#' + id + ' tbody');
    var rows = items.length ? items.map(render) : [el('tr', null, el('td', { colspan: cols, class: 'muted', text: 'none' }))];
    body.replaceChildren.apply(body, rows);
  }
  function hostConditionBadges(h) {
    var out = h.conditions.map(function (c) {
      var label = c.type === 'Degraded' ? (c.status === 'True' ? 'Degraded' : null) : (c.status === 'True' ? c.type : c.type + ' ' + c.status);
      return label ? badge(c, label) : null;
    });
    if (h.nodeReady) out.push(badge(h.nodeReady, h.nodeReady.status === 'True' ? 'Node Ready' : 'Node NotReady'));
    h.nodeProblems.forEach(function (c) { out.push(badge(c)); });
    if (h.rolloutStep) out.push(el('span', { class: 'badge warn', text: 'rollout: ' + h.rolloutStep }));
    if (h.remediationRung) out.push(el('span', { class: 'badge warn', text: 'repair: ' + h.remediationRung }));
    return out;
  }
  function hostRow(h) {
    var tr = el('tr', { 'data-host': h.key, class: state.detailKey === h.key ? 'selected' : null, onclick: function () { openHost(h.key); } }, [
      el('td', null, [el('div', { class: 'name', text: h.name }), el('div', { class: 'muted small', text: h.namespace + (h.hostname ? ' · ' + h.hostname : '') + ' · ' + h.address })]),
      el('td', { text: h.pool || '' }),
      el('td', { text: h.node || '' }),
      el('td', { class: 'nowrap', text: h.windowsVersion || '' }),
      el('td', { class: 'nowrap', text: h.kubeletVersion || '' }),
      el('td', { class: 'nowrap', text: h.servicesVersion || '' }),
      el('td', { class: 'conditions' }, hostConditionBadges(h)),
      el('td', { class: 'msg' }, [el('div', { class: 'state ' + h.tone, text: h.state }), el('div', { class: 'muted small clip', text: h.lastError || h.message })])
    ]);
    return tr;
  }
  function poolRow(p) {
    return el('tr', { 'data-pool': p.key }, [
      el('td', null, [el('div', { text: p.name }), el('div', { class: 'muted small', text: p.namespace + ' · maxUnavailable ' + p.maxUnavailable })]),
      el('td', { text: p.hosts }), el('td', { text: p.readyHosts }), el('td', { text: p.updatedHosts }), el('td', { text: p.unavailableHosts }),
      el('td', null, [el('div', { class: p.tone, text: p.state })].concat(p.conditions.filter(function (c) { return c.tone !== 'ok'; }).map(function (c) { return badge(c, c.type + ': ' + c.reason); }))),
      el('td', { class: 'small' }, p.inProgress.map(function (i) { return el('div', null, [i.name + ' — ' + i.step + ' ', when(i.since)]); }))
    ]);
  }
  function nodeRow(n) {
    return el('tr', { 'data-node': n.name }, [
      el('td', { text: n.name }), el('td', { text: n.os }), el('td', { class: 'nowrap', text: n.kernelVersion || n.build || '' }),
      el('td', { class: 'nowrap', text: n.kubeletVersion || '' }),
      el('td', { text: (n.servicesVersion || '–') + ' / ' + (n.desiredServicesVersion || '–') }),
      el('td', { class: n.ready ? 'ok' : 'bad', text: n.ready ? 'Ready' : 'NotReady' }),
      el('td', null, n.schedulable ? 'yes' : el('span', { class: 'warn', text: 'cordoned' })),
      el('td', null, n.problems.map(function (c) { return badge(c); }))
    ]);
  }
  function render(o) {
    state.overview = o;
    var s = o.summary;
    document.getElementById('summary').textContent =
      s.readyHosts + ' of ' + plural(s.hosts, 'Windows host') + ' Ready' + (s.degradedHosts ? ', ' + s.degradedHosts + ' need attention' : '') +
      ' · ' + plural(s.nodes, 'node') + ' (' + s.notReadyNodes + ' NotReady) · ' + plural(s.pools, 'pool') + (s.rollingOut ? ', ' + s.rollingOut + ' rolling out' : '') +
      ' · updated ' + new Date(o.generatedAt).toLocaleTimeString();
    fill('hosts', o.hosts, hostRow, 8);
    fill('pools', o.pools, poolRow, 7);
    fill('rcs', o.runtimeClasses, function (r) {
      return el('tr', null, [el('td', { text: r.name }), el('td', { text: r.handler }), el('td', { text: r.build || '' }), el('td', { text: r.managed ? 'winfleet' : 'user' })]);
    }, 4);
    fill('nodes', o.nodes, nodeRow, 8);
    if (state.detailKey) {
      var json = rowJson(o, state.detailKey);
      // undefined: the detail was asked for before any overview came; it answers for this row.
      if (state.detailRowJson === undefined) state.detailRowJson = json;
      else if (json !== state.detailRowJson) { state.detailRowJson = json; scheduleDetail(); }
    }
  }
  function rowJson(o, key) {
    return JSON.stringify(o.hosts.find(function (x) { return x.key === key; }) || null);
  }

  // The detail view.
  function kv(pairs) {
    var dl = el('dl', { class: 'kv' });
    pairs.forEach(function (p) { if (p[1] !== undefined && p[1] !== null && p[1] !== '') add(dl, [el('dt', { text: p[0] }), el('dd', null, p[1])]); });
    return dl;
  }
  function conditionTable(list, cls) {
    if (!list.length) return el('p', { class: 'muted', text: 'none' });
    return el('table', { class: 'grid ' + (cls || '') }, [
      el('thead', null, el('tr', null, ['Type', 'Status', 'Reason', 'Message', 'Since'].map(function (t) { return el('th', { text: t }); }))),
      el('tbody', null, list.map(function (c) {
        return el('tr', { 'data-condition': c.type }, [el('td', { text: c.type }), el('td', { class: c.tone, text: c.status }), el('td', { text: c.reason }), el('td', { class: 'msg', text: c.message }), el('td', null, when(c.since))]);
      }))
    ]);
  }
  function renderDetail(d) {
    var h = d.host;
    state.detailRowJson = JSON.stringify(h);
    document.getElementById('detail-title').textContent = h.namespace + '/' + h.name;
    var v = d.versions;
    var parts = [
      el('p', null, [el('span', { class: 'state ' + h.tone, text: h.state }), h.message ? ' — ' : '', h.message]),
      el('h3', { text: 'Host' }),
      kv([['Mode', d.mode === 'Pull' ? 'Pull: joined by itself; its agent pulls, winfleet never connects over SSH' : 'SSH'], ['Address', d.mode === 'Pull' ? undefined : h.address], ['User', d.username], ['Host name', h.hostname], ['Node', h.node], ['Pool', h.pool], ['Addresses', d.addresses.join(', ')], ['Host key', d.hostKeyFingerprint]]),
      el('h3', { text: 'Versions' }),
      kv([['Windows', v.windowsVersion], ['Build', v.windowsBuild], ['UBR', v.ubr], ['Kubelet', v.kubeletVersion], ['kube-proxy', v.kubeProxyVersion], ['Runtime', v.containerRuntime], ['Services', (v.servicesVersion || '–') + ' applied / ' + (v.desiredServicesVersion || '–') + ' wanted']]),
      el('h3', { text: 'Join steps' }),
      conditionTable(d.joinSteps, 'join-steps'),
      kv([['Bootstrapped', d.bootstrappedAt ? when(d.bootstrappedAt) : ''], ['Last error', d.lastError ? el('span', { class: 'error', text: d.lastError.step + ': ' + d.lastError.message + ' (' + ago(d.lastError.time) + ')' }) : '']]),
      el('h3', { text: 'Node conditions' }),
      conditionTable(d.nodeConditions, 'node-conditions')
    ];
    if (d.rollout || d.lastRebootAt) {
      parts.push(el('h3', { text: 'Rollout' }));
      parts.push(kv(d.rollout ? [['Step', d.rollout.step + ' (since ' + ago(d.rollout.stepStartedAt) + ')'], ['Changes', d.rollout.changes.join(', ')], ['Target', d.rollout.target], ['Started', when(d.rollout.startedAt)], ['Stopped', d.rollout.failure ? el('span', { class: 'error', text: d.rollout.failure }) : ''], ['Last reboot', when(d.lastRebootAt)]] : [['Last reboot', when(d.lastRebootAt)]]));
    }
    var r = d.remediation;
    if (r.current || r.failed || r.lastActions.length) {
      parts.push(el('h3', { text: 'Remediation' }));
      parts.push(kv([['Running', r.current ? r.current.rung + ' (' + r.current.problem + ')' + (r.current.held ? ', held: ' + r.current.held : '') : ''], ['Failed', r.failed ? el('span', { class: 'error', text: r.failed }) : '']]));
      if (r.lastActions.length) parts.push(el('table', { class: 'grid' }, [
        el('thead', null, el('tr', null, ['When', 'Rung', 'Result', 'Message'].map(function (t) { return el('th', { text: t }); }))),
        el('tbody', null, r.lastActions.map(function (a) { return el('tr', null, [el('td', null, when(a.time)), el('td', { text: a.rung }), el('td', { text: a.result }), el('td', { class: 'msg', text: a.message })]); }))
      ]));
    }
    var u = d.windowsUpdates;
    if (u) {
      parts.push(el('h3', { text: 'Windows Update' }));
      parts.push(kv([['Searched', when(u.searchedAt)], ['Available', u.available.join(', ')], ['Installed', u.installed.join(', ')], ['Failed', u.failed.join(', ')], ['Reboot pending', u.rebootPending ? 'yes' : ''], ['Error', u.error]]));
    }
    var pp = d.prePull;
    if (pp) {
      parts.push(el('h3', { text: 'Images before pods' }));
      parts.push(kv([['State', el('span', { class: pp.reason === 'PrePulling' || pp.status === 'True' ? '' : 'error', text: pp.reason + (pp.imagesTotal !== undefined ? ' (' + pp.imagesDone + ' of ' + pp.imagesTotal + ' images)' : '') })], ['Since', when(pp.lastTransitionTime)], ['Message', pp.message]]));
    }
    parts.push(el('h3', { text: 'Recent events' }));
    if (d.eventsError) parts.push(el('p', { class: 'error', text: d.eventsError }));
    parts.push(d.events.length ? el('table', { class: 'grid events' }, [
      el('thead', null, el('tr', null, ['When', 'Type', 'Reason', 'Object', 'Message'].map(function (t) { return el('th', { text: t }); }))),
      el('tbody', null, d.events.map(function (e) {
        return el('tr', { 'data-reason': e.reason }, [el('td', null, when(e.lastSeen)), el('td', { class: e.type === 'Warning' ? 'warn' : '', text: e.type }), el('td', { text: e.reason + (e.count > 1 ? ' ×' + e.count : '') }), el('td', { text: e.object }), el('td', { class: 'msg', text: e.message })]);
      }))
    ]) : el('p', { class: 'muted', text: 'no events' }));
    var body = document.getElementById('detail-body');
    body.replaceChildren.apply(body, parts);
  }
  function loadDetail() {
    var key = state.detailKey;
    if (!key) return;
    var parts = key.split('/');
    fetch('api/hosts/' + encodeURIComponent(parts[0]) + '/' + encodeURIComponent(parts[1]), { cache: 'no-store' })
      .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, body: j }; }); })
      .then(function (res) {
        if (state.detailKey !== key) return;
        if (!res.ok) {
          state.detailRowJson = null;
          document.getElementById('detail-body').replaceChildren(el('p', { class: 'error', text: res.body.error || 'cannot load the host' }));
          return;
        }
        renderDetail(res.body);
      })
      .catch(function (e) { if (state.detailKey !== key) return; state.detailRowJson = null; document.getElementById('detail-body').replaceChildren(el('p', { class: 'error', text: 'cannot reach the operator: ' + e })); });
  }
  function scheduleDetail() {
    if (state.detailTimer) return;
    state.detailTimer = setTimeout(function () { state.detailTimer = null; loadDetail(); }, 300);
  }
  function openHost(key) { location.hash = '#host/' + key; }
  function fromHash() {
    var m = /^#host\\/([^/]+)\\/([^/]+)$/.exec(location.hash);
    var key = m ? decodeURIComponent(m[1]) + '/' + decodeURIComponent(m[2]) : null;
    state.detailKey = key;
    state.detailRowJson = key && state.overview ? rowJson(state.overview, key) : undefined;
    var aside = document.getElementById('detail');
    document.querySelectorAll('#hosts tbody tr').forEach(function (tr) { tr.classList.toggle('selected', tr.getAttribute('data-host') === key); });
    if (!key) { aside.hidden = true; return; }
    aside.hidden = false;
    document.getElementById('detail-title').textContent = key;
    document.getElementById('detail-body').replaceChildren(el('p', { class: 'muted', text: 'loading…' }));
    loadDetail();
  }

  // Live updates.
  function connState(text, cls) { var c = document.getElementById('conn'); c.textContent = text; c.className = 'conn ' + cls; }
  function poll() {
    fetch('api/overview', { cache: 'no-store' }).then(function (r) { return r.json(); })
      .then(function (o) { render(o); connState('polling', 'live'); })
      .catch(function () { connState('cannot reach the operator', 'down'); })
      .then(function () { setTimeout(poll, 5000); });
  }
  function connect() {
    if (!window.EventSource) { poll(); return; }
    var es = new EventSource('api/stream');
    state.es = es;
    es.addEventListener('overview', function (ev) {
      state.retryMs = 1000;
      connState('live', 'live');
      render(JSON.parse(ev.data));
    });
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (an HTTP error such as 503): connect again later.
        connState('reconnecting…', 'down');
        var wait = state.retryMs;
        state.retryMs = Math.min(state.retryMs * 2, 30000);
        setTimeout(connect, wait);
      } else {
        connState('reconnecting…', 'down');
      }
    };
  }

  document.getElementById('detail-close').addEventListener('click', function () { history.replaceState(null, '', location.pathname + location.search); fromHash(); });
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape' && state.detailKey) document.getElementById('detail-close').click(); });
  window.addEventListener('hashchange', fromHash);
  fromHash();
  connect();
})();
`;
