import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { kubeletFirewallRule } from '../../src/agent/kubelet-firewall.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/certificates.ts';
import { criTimestamp, parseCriLog, renderContainerLog } from './container-logs.ts';
import type { FirewallRule } from './firewall.ts';
import { kubeletSubresources, podLogOptions, startKubeletServer } from './kubelet-server.ts';
import { createTestMachine } from './test-machine.ts';

const allowKubelet: FirewallRule = {
  name: kubeletFirewallRule.name,
  displayName: kubeletFirewallRule.displayName,
  description: '',
  direction: 'Inbound',
  action: 'Allow',
  protocol: 'TCP',
  localPorts: [10250],
  enabled: true,
};

/** What a TLS client sees: the handshake, an alert, or nothing until it gives up. */
function handshake(
  address: string,
  ca: string,
): Promise<'secure' | 'silence' | `refused: ${string}`> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: address, port: 10250, ca, servername: 'win-kubelet' });
    socket.setTimeout(1500, () => {
      socket.destroy();
      resolve('silence');
    });
    socket.once('secureConnect', () => {
      socket.destroy();
      resolve('secure');
    });
    socket.once('error', (error) => resolve(`refused: ${error.message}`));
  });
}

test('the kubelet API: behind the firewall, no TLS before its serving certificate, 401 without credentials', async (t) => {
  const machine = await createTestMachine(t, { address: '127.0.0.171' });
  const ca = await createCertificateAuthority('test-ca');
  await machine.fs.writeFileAtomic('C:\\k\\ca.crt', ca.certPem);
  const stop = new AbortController();
  t.after(() => stop.abort());
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const server = await startKubeletServer({
    machine,
    settings: {
      certDir: 'C:\\var\\lib\\kubelet\\pki',
      serverTLSBootstrap: true,
      clientCAFile: 'C:\\k\\ca.crt',
      port: 10250,
    },
    nodeName: 'win-kubelet',
    kc,
    signal: stop.signal,
    log: () => {},
    certPollMs: 20,
    droppedConnectionMs: 5000,
  });
  assert.equal(server.address, '127.0.0.171:10250');

  // Closed by default: the connection gets no answer at all.
  assert.equal(await handshake(machine.address, ca.certPem), 'silence');
  machine.firewall.add(allowKubelet);
  // Open, but the kubelet-serving CSR has not been signed yet: the handshake fails.
  assert.match(await handshake(machine.address, ca.certPem), /^refused: /);

  const serving = await issueCertificate(ca, {
    commonName: 'system:node:win-kubelet',
    organizations: ['system:nodes'],
    dnsNames: ['win-kubelet'],
    ipAddresses: [machine.address],
    usage: 'server',
  });
  await machine.fs.writeFileAtomic(
    'C:\\var\\lib\\kubelet\\pki\\kubelet-server-current.pem',
    `${serving.certPem}${serving.keyPem}`,
  );
  let outcome = '';
  for (let i = 0; i < 100 && outcome !== 'secure'; i++) {
    outcome = await handshake(machine.address, ca.certPem);
  }
  assert.equal(outcome, 'secure', 'served with the signed certificate once it is there');

  const response = await fetchKubelet(machine.address, ca.certPem, '/containerLogs/ns/pod/app');
  assert.deepEqual(response, { status: 401, body: 'Unauthorized\n' });

  machine.firewall.set(allowKubelet.name, { enabled: false });
  assert.equal(await handshake(machine.address, ca.certPem), 'silence', 'a disabled rule');
});

async function fetchKubelet(
  address: string,
  ca: string,
  path: string,
): Promise<{ status: number; body: string }> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(
      { host: address, port: 10250, path, ca, servername: 'win-kubelet', timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('paths are authorized as the kubelet maps them to nodes subresources', () => {
  assert.deepEqual(kubeletSubresources('/containerLogs/ns/pod/c'), ['proxy']);
  assert.deepEqual(kubeletSubresources('/exec/ns/pod/c'), ['proxy']);
  assert.deepEqual(kubeletSubresources('/logs/'), ['log']);
  assert.deepEqual(kubeletSubresources('/stats/summary'), ['stats']);
  assert.deepEqual(kubeletSubresources('/metrics/cadvisor'), ['metrics']);
  assert.deepEqual(kubeletSubresources('/pods'), ['pods', 'proxy']);
  assert.deepEqual(kubeletSubresources('/healthz'), ['healthz', 'proxy']);
  assert.deepEqual(kubeletSubresources('/configz'), ['configz', 'proxy']);
  assert.deepEqual(kubeletSubresources('/podsx'), ['proxy']);
});

test('PodLogOptions are decoded and validated as the kubelet does', () => {
  const query = (q: string) => podLogOptions(new URLSearchParams(q));
  assert.deepEqual(query(''), { follow: false, previous: false, timestamps: false });
  assert.deepEqual(query('tailLines=3&timestamps=true&limitBytes=10'), {
    follow: false,
    previous: false,
    timestamps: true,
    tailLines: 3,
    limitBytes: 10,
  });
  assert.equal(query('tail=5').tailLines, 5);
  assert.equal(query('tail=all').tailLines, undefined);
  assert.throws(() => query('tailLines=x'), { status: 400, message: /Unable to decode query/ });
  assert.throws(() => query('follow=yes'), { status: 400 });
  assert.throws(() => query('tailLines=-1'), { status: 422, message: /Invalid request/ });
  assert.throws(() => query('limitBytes=0'), { status: 422 });
  assert.throws(() => query('sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z'), { status: 422 });
});

test('CRI log files are read back as the kubelet returns them', () => {
  const t0 = new Date('2026-03-04T05:06:07.890Z');
  assert.equal(criTimestamp(t0, 12), '2026-03-04T05:06:07.890000012Z');
  const file = [
    `${criTimestamp(t0)} stdout F first line`,
    `${criTimestamp(t0, 1)} stderr P second `,
    `${criTimestamp(t0, 2)} stderr F line, in two parts`,
    'not a CRI line',
    `${criTimestamp(new Date(t0.getTime() + 60_000))} stdout F third line`,
    '',
  ].join('\n');
  assert.equal(parseCriLog(file).length, 4);
  assert.equal(renderContainerLog(file), 'first line\nsecond line, in two parts\nthird line\n');
  assert.equal(renderContainerLog(file, { tailLines: 1 }), 'third line\n');
  assert.equal(renderContainerLog(file, { tailLines: 0 }), '');
  assert.equal(
    renderContainerLog(file, { timestamps: true, tailLines: 1 }),
    '2026-03-04T05:07:07.890000000Z third line\n',
  );
  assert.equal(renderContainerLog(file, { limitBytes: 5 }), 'first');
  assert.equal(
    renderContainerLog(file, { sinceTime: new Date(t0.getTime() + 1000) }),
    'third line\n',
  );
});
