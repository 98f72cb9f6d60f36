/**
 * The dashboard: one self-contained page served by the operator at /, which reads
 * /api/overview every two seconds and draws the hosts, nodes and RuntimeClasses. No build step,
 * no external assets (it must work in air-gapped clusters).
 */
export const dashboardHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>winfleet</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1d232a; }
  h1 { font-size: 1.3rem; margin: 0 0 .2rem; } h2 { font-size: 1.05rem; margin: 1.6rem 0 .4rem; }
  .sub { color: #5b6470; margin-bottom: 1rem; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: .3rem .6rem; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
  th { font-weight: 600; background: #f5f7f9; }
  .ok { color: #137333; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; } .mid { color: #8a5a00; }
  .muted { color: #5b6470; } td.msg { max-width: 36rem; }
</style>
</head>
<body>
<h1>winfleet</h1>
<div class="sub" id="summary">loading…</div>
<h2>Windows hosts</h2>
<table id="hosts"><thead><tr><th>Host</th><th>Address</th><th>Node</th><th>Windows</th><th>Services</th><th>State</th><th>Detail</th></tr></thead><tbody></tbody></table>
<h2>Nodes</h2>
<table id="nodes"><thead><tr><th>Node</th><th>OS</th><th>Build</th><th>Kubelet</th><th>Services (applied / wanted)</th><th>Ready</th><th>Schedulable</th></tr></thead><tbody></tbody></table>
<h2>RuntimeClasses</h2>
<table id="rcs"><thead><tr><th>Name</th><th>Handler</th><th>Windows build</th><th>Owner</th></tr></thead><tbody></tbody></table>
<script>
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const cls = (state) => state === 'Ready' ? 'ok' : state.startsWith('Degraded') ? 'bad' : 'mid';
function rows(id, items, render) {
  document.querySelector('#' + id + ' tbody').innerHTML = items.length ? items.map(render).join('') : '<tr><td colspan="7" class="muted">none</td></tr>';
}
async function refresh() {
  try {
    const o = await (await fetch('api/overview')).json();
    const ready = o.hosts.filter((h) => h.state === 'Ready').length;
    document.getElementById('summary').textContent = ready + ' of ' + o.hosts.length + ' Windows hosts Ready, ' + o.nodes.length + ' nodes — updated ' + new Date(o.generatedAt).toLocaleTimeString();
    rows('hosts', o.hosts, (h) => '<tr><td>' + esc(h.namespace + '/' + h.name) + (h.pool ? ' <span class="muted">(' + esc(h.pool) + ')</span>' : '') + '</td><td>' + esc(h.address) + '</td><td>' + esc(h.node) + '</td><td>' + esc(h.windowsVersion) + '</td><td>' + esc(h.servicesVersion) + '</td><td class="' + cls(h.state) + '">' + esc(h.state) + '</td><td class="msg">' + esc(h.lastError || h.message) + '</td></tr>');
    rows('nodes', o.nodes, (n) => '<tr><td>' + esc(n.name) + '</td><td>' + esc(n.os) + '</td><td>' + esc(n.kernelVersion || n.build) + '</td><td>' + esc(n.kubeletVersion) + '</td><td>' + esc((n.servicesVersion || '–') + ' / ' + (n.desiredServicesVersion || '–')) + '</td><td class="' + (n.ready ? 'ok' : 'bad') + '">' + (n.ready ? 'Ready' : 'NotReady') + '</td><td>' + (n.schedulable ? 'yes' : '<span class="mid">cordoned</span>') + '</td></tr>');
    rows('rcs', o.runtimeClasses, (r) => '<tr><td>' + esc(r.name) + '</td><td>' + esc(r.handler) + '</td><td>' + esc(r.build) + '</td><td>' + (r.managed ? 'winfleet' : 'user') + '</td></tr>');
  } catch (e) {
    document.getElementById('summary').textContent = 'cannot reach the operator: ' + e;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
`;
