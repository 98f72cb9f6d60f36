/**
 * `kubectl logs` of a pod on a joined simulated host, end to end: the real API server dials
 * the node's InternalIP on port 10250 with its kubelet client certificate and checks the
 * kubelet's serving certificate (the kubelet-serving CSR winfleet approved) against the cluster
 * CA; the kubelet stand-in authenticates it, authorizes it with a SubjectAccessReview and
 * serves the container's CRI log file. The host's firewall lets that through only because the
 * agent's bootstrap opened the port: without the rule the request times out.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { kubeletFirewallRule } from '../../src/agent/kubelet-firewall.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import {
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../../src/pki/certificates.ts';
import { joinWorld } from '../testkit/join-fixture.ts';
import { kubectl } from '../testkit/kubectl.ts';
import { testNamespace } from '../testkit/test-cluster.ts';
import { createWindowsHosts, hostReady, listWindowsHosts } from '../testkit/windows-hosts.ts';
import { containerLogPath } from './container-logs.ts';
import { SimHostOS } from './sim-host-os.ts';

test('kubectl logs reads a Windows pod’s log through the kubelet API, only with the firewall rule', async (t) => {
  const world = await joinWorld(t, { releases: ['2022'] });
  const { kc, cluster } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const simulated = world.fleet.hosts[0]!;
  await createWindowsHosts(kc, world.namespace, world.fleet.hosts);
  const [host] = await waitFor(
    async () => {
      const list = await listWindowsHosts(kc, world.namespace);
      return list.length === 1 && list.every(hostReady) ? list : undefined;
    },
    { description: 'the host Ready', timeoutMs: 120_000, intervalMs: 500 },
  );
  const nodeName = host!.status!.nodeName!;
  const node = await core.readNode({ name: nodeName });
  assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
  assert.equal(
    node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address,
    simulated.address,
    'the node IP is the host’s own address, not an HNS or APIPA one',
  );
  assert.ok(simulated.machine.firewall.rule(kubeletFirewallRule.name), 'bootstrap opened 10250');

  const namespace = await testNamespace(kc, 'logs');
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: 'web' },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': nodeName },
        tolerations: [{ key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' }],
        containers: [
          {
            name: 'app',
            image: 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
            command: ['powershell', '-Command', 'Start-Service W3SVC; Get-Content -Wait x.log'],
          },
        ],
      },
    },
  });
  const pod = await waitFor(
    async () => {
      const p = await core.readNamespacedPod({ name: 'web', namespace });
      return p.status?.phase === 'Running' ? p : undefined;
    },
    { description: 'the pod Running', timeoutMs: 60_000 },
  );
  const logFile = containerLogPath({ namespace, name: 'web', uid: pod.metadata!.uid! }, 'app', 0);
  await waitFor(() => simulated.machine.fs.stat(logFile), {
    description: `the container's log file ${logFile}`,
    timeoutMs: 30_000,
  });

  // Without the rule (today's main never opens the port) the firewall drops the API server's
  // connection: kubectl logs fails once the API server's TLS handshake timeout passes.
  // (Connections made before a rule goes keep working, as on Windows: so this comes first.)
  simulated.machine.firewall.remove(kubeletFirewallRule.name);
  const refused = await kubectl(cluster.kubeconfigPath, [
    'logs',
    '-n',
    namespace,
    'web',
    '--request-timeout=60s',
  ]);
  assert.notEqual(refused.code, 0);
  t.diagnostic(`kubectl logs without the rule: ${refused.stderr.trim()}`);
  assert.match(refused.stderr, /timeout/i);
  // What bootstrap does: the rule is back.
  await new SimHostOS(simulated.machine).ensureInboundFirewallRule(kubeletFirewallRule);

  // The serving certificate comes from a CSR the operator approves; until the kubelet serves
  // with it the API server's TLS check fails, so the first answer may take a moment.
  const logs = await waitFor(
    async () => {
      const result = await kubectl(cluster.kubeconfigPath, ['logs', '-n', namespace, 'web']);
      return result.code === 0 ? result.stdout : undefined;
    },
    { description: 'kubectl logs to answer', timeoutMs: 60_000, intervalMs: 1000 },
  );
  assert.equal(
    logs,
    `winfleet simulated container "app" of pod ${namespace}/web started from image mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022\nrunning: powershell -Command Start-Service W3SVC; Get-Content -Wait x.log\n`,
  );
  const tail = await core.readNamespacedPodLog({
    name: 'web',
    namespace,
    container: 'app',
    tailLines: 1,
    timestamps: true,
  });
  assert.match(tail, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z running: powershell /);
  const missing = await kubectl(cluster.kubeconfigPath, [
    'logs',
    '-n',
    namespace,
    'web',
    '-c',
    'nope',
  ]);
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /container nope is not valid for pod web/);

  await t.test('the kubelet authenticates and authorizes who calls it directly', async () => {
    const ca = await loadCertificateAuthority({
      certPem: await readFile(cluster.pki.caCert, 'utf8'),
      keyPem: await readFile(cluster.pki.caKey, 'utf8'),
    });
    const path = `/containerLogs/${namespace}/web/app`;
    const call = (cert?: { certPem: string; keyPem: string }) =>
      kubeletGet(simulated.address, path, ca.certPem, cert);
    assert.deepEqual(await call(), { status: 401, body: 'Unauthorized\n' });
    // A certificate from another CA is nobody to the kubelet.
    const stranger = await createCertificateAuthority('not-the-cluster');
    const forged = await issueCertificate(stranger, {
      commonName: 'kube-apiserver-kubelet-client',
      usage: 'client',
    });
    assert.equal((await call(forged)).status, 401);
    // A user the cluster knows but RBAC gives nothing on nodes/proxy.
    const alice = await issueCertificate(ca, { commonName: 'alice', usage: 'client' });
    assert.deepEqual(await call(alice), {
      status: 403,
      body: `Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])\n`,
    });
    // A serving certificate is no client certificate.
    const server = await issueCertificate(ca, {
      commonName: 'kube-apiserver-kubelet-client',
      usage: 'server',
    });
    assert.equal((await call(server)).status, 401);
    const apiserver = {
      certPem: await readFile(cluster.pki.kubeletClientCert, 'utf8'),
      keyPem: await readFile(cluster.pki.kubeletClientKey, 'utf8'),
    };
    const allowed = await call(apiserver);
    assert.equal(allowed.status, 200, allowed.body);
    assert.match(allowed.body, /^winfleet simulated container "app"/);
    const elsewhere = await kubeletGet(
      simulated.address,
      `/containerLogs/${namespace}/not-here/app`,
      ca.certPem,
      apiserver,
    );
    assert.deepEqual(elsewhere, { status: 404, body: 'pod "not-here" does not exist\n' });
  });
});

/** GET on the kubelet API with an optional client certificate. */
function kubeletGet(
  address: string,
  path: string,
  ca: string,
  cert?: { certPem: string; keyPem: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: address,
        port: 10250,
        path,
        ca,
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
        timeout: 10_000,
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${address}:10250${path}`)));
    req.on('error', reject);
    req.end();
  });
}
