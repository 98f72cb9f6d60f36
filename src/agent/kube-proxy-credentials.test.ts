// @peculiar/x509 (behind src/pki) needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import {
  createAgentTestHost,
  prepareAsOperator,
  serviceStates,
  testManifest,
} from '../../sim/hosts/agent-test-host.ts';
import type { SimMachine } from '../../sim/hosts/machine.ts';
import { kubeProxyUserName } from '../api/kube-proxy-identity.ts';
import { servicesManifestFor } from '../payload/node-services.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/certificates.ts';
import { cniNetworkName } from '../servicesmanifest/host-paths.ts';
import type { ServicesManifest } from '../servicesmanifest/services-manifest.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import {
  ensureKubeProxyCredentials,
  kubeProxyCredentialUsers,
  kubeProxyKubeconfigText,
  kubeProxyPendingKeyPath,
  parseKubeProxyKubeconfig,
  renewalTime,
  replacementReason,
} from './kube-proxy-credentials.ts';
import { cniConfig, nodeVariableValues } from './node-files.ts';
import { runAgent } from './run-agent.ts';
import { checkOnce } from './run-loop.ts';

const dayMs = 24 * 3600 * 1000;

/** The manifest the operator publishes for a payload with these files. */
const payloadManifest = (names: string[]) =>
  servicesManifestFor({
    version: '1.36.5-wf.1',
    kubernetesVersion: 'v1.36.5',
    files: names.map((name) => ({
      name,
      version: 'v1.36.5',
      sha256: '0'.repeat(64),
      source: { path: name },
    })),
  });

test('a service uses the kube-proxy kubeconfig only when its --kubeconfig flag names exactly that file', () => {
  const manifest = payloadManifest(['kubelet.exe', 'kube-proxy.exe', 'kube-log-runner.exe']);
  const kubelet = manifest.services.find((s) => s.name === 'kubelet')!;
  for (const args of [
    [`--kubeconfig=${paths.kubeProxyKubeconfig}.bak`],
    [`--config=${paths.kubeProxyKubeconfig}`],
    [`--kubeconfig=C:\\other${paths.kubeProxyKubeconfig}`],
  ]) {
    kubelet.args = args;
    assert.deepEqual(kubeProxyCredentialUsers(manifest), ['kube-proxy'], args.join(' '));
  }
  for (const args of [
    [`--kubeconfig=${paths.kubeProxyKubeconfig.toUpperCase()}`],
    ['--kubeconfig', paths.kubeProxyKubeconfig],
  ]) {
    kubelet.args = args;
    assert.deepEqual(
      kubeProxyCredentialUsers(manifest).sort(),
      ['kube-proxy', 'kubelet'],
      args.join(' '),
    );
  }
});

test('the published kube-proxy runs with its own kubeconfig, the CNI network’s name and the cluster’s pod CIDR', async (t) => {
  const manifest = payloadManifest(['kubelet.exe', 'kube-proxy.exe', 'kube-log-runner.exe']);
  const proxy = manifest.services.find((s) => s.name === 'kube-proxy')!;
  assert.ok(proxy.args.includes(`--kubeconfig=${paths.kubeProxyKubeconfig}`));
  assert.ok(!proxy.args.includes(`--kubeconfig=${paths.kubeconfig}`), 'not the node’s');
  assert.ok(proxy.args.includes(`--network-name=${cniNetworkName}`));
  assert.ok(proxy.args.includes('--cluster-cidr={{podCIDR}}'));
  assert.deepEqual(kubeProxyCredentialUsers(manifest), ['kube-proxy']);

  // The network name is the conflist's, and {{podCIDR}} is the cluster-wide CIDR of the config.
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString());
  const conflist = JSON.parse(cniConfig(config, '10.244.5.0/24')) as { name: string };
  assert.equal(conflist.name, cniNetworkName);
  assert.equal(nodeVariableValues(config).podCIDR, config.podCIDR);
});

test('kube-proxy’s kubeconfig is written inline and read back; what is missing is named', async () => {
  const ca = await createCertificateAuthority('test-ca');
  const issued = await issueCertificate(ca, {
    commonName: kubeProxyUserName('win-a'),
    organizations: ['winfleet:kube-proxies'],
    usage: 'client',
  });
  const written = {
    server: 'https://127.0.0.1:6443',
    caPem: ca.certPem,
    certPem: issued.certPem,
    keyPem: issued.keyPem,
  };
  assert.deepEqual(parseKubeProxyKubeconfig(kubeProxyKubeconfigText(written)), written);
  assert.throws(() => parseKubeProxyKubeconfig('clusters: [{cluster: {server: https://x}}]'), {
    code: 'WF_KUBE_PROXY_CERTIFICATE',
    message: /kube-proxy\.kubeconfig has no certificate-authority-data/,
  });
});

test('a certificate is replaced once 70% of its lifetime has passed, or when it does not fit the node', async () => {
  const ca = await createCertificateAuthority('test-ca');
  const notBefore = new Date(Date.now() - 60_000);
  const issued = await issueCertificate(ca, {
    commonName: kubeProxyUserName('win-a'),
    organizations: ['winfleet:kube-proxies'],
    usage: 'client',
    days: 10,
    notBefore,
  });
  const current = {
    server: 'https://127.0.0.1:6443',
    caPem: ca.certPem,
    certPem: issued.certPem,
    keyPem: issued.keyPem,
  };
  const expected = { nodeName: 'win-a', server: current.server, caPem: ca.certPem };
  const certificate = new X509Certificate(issued.certPem);
  const lifetime =
    new Date(certificate.validTo).getTime() - new Date(certificate.validFrom).getTime();
  const renewAt = renewalTime(certificate).getTime();
  assert.equal(renewAt, new Date(certificate.validFrom).getTime() + lifetime * 0.7);

  assert.equal(replacementReason(current, expected, new Date(renewAt - 1000)), undefined);
  assert.match(replacementReason(current, expected, new Date(renewAt))!, /70% of its/);
  assert.match(
    replacementReason(current, { ...expected, nodeName: 'win-b' }, new Date())!,
    /not for winfleet:kube-proxy:win-b/,
  );
  assert.match(
    replacementReason(current, { ...expected, server: 'https://10.0.0.1:6443' }, new Date())!,
    /names API server/,
  );
  const other = await issueCertificate(ca, { commonName: 'x', usage: 'client' });
  assert.match(
    replacementReason({ ...current, keyPem: other.keyPem }, expected, new Date())!,
    /key is not the key of its certificate/,
  );
  const otherCa = await createCertificateAuthority('other-ca');
  assert.match(
    replacementReason(current, { ...expected, caPem: otherCa.certPem }, new Date())!,
    /cluster CA differs/,
  );
  assert.ok(Date.now() + 10 * dayMs > renewAt, 'the test certificate lives 10 days');
});

/** The agent-test manifest with kube-proxy reading its own kubeconfig, as the payload's does. */
function manifestWithProxyKubeconfig(): ServicesManifest {
  const manifest = testManifest();
  manifest.services.find((s) => s.name === 'kube-proxy')!.args = [
    `--kubeconfig=${paths.kubeProxyKubeconfig}`,
  ];
  return manifest;
}

async function bootstrapped(
  t: Parameters<typeof createAgentTestHost>[0],
  before?: (m: SimMachine) => Promise<void>,
) {
  const host = await createAgentTestHost(t);
  await before?.(host.machine);
  await prepareAsOperator(host.machine, manifestWithProxyKubeconfig());
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString());
  return { ...host, config };
}

test('kube-proxy is registered but not started until its kubeconfig exists, then it starts', async (t) => {
  const { machine, context, config } = await bootstrapped(t);
  // No C:\k\kubeconfig here (no kubelet bootstraps): nothing can be requested yet.
  await checkOnce(context, config);
  assert.deepEqual(serviceStates(machine, ['kubelet', 'kube-proxy', 'csi-proxy']), {
    kubelet: 'running',
    'kube-proxy': 'stopped',
    'csi-proxy': 'running',
  });
  await machine.fs.writeFileAtomic(paths.kubeProxyKubeconfig, 'written by the agent');
  await checkOnce(context, config);
  assert.equal(machine.scm.query('kube-proxy')?.state, 'running');
});

test('without node credentials nothing is requested and services that do not use the kubeconfig are not held', async (t) => {
  const { context } = await createAgentTestHost(t);
  const withUser = await ensureKubeProxyCredentials(
    context,
    manifestWithProxyKubeconfig(),
    'win-a',
    undefined,
  );
  assert.deepEqual([...withUser.holdBack], ['kube-proxy']);
  assert.deepEqual([...withUser.restart], []);
  const without = await ensureKubeProxyCredentials(context, testManifest(), 'win-a', undefined);
  assert.deepEqual([...without.holdBack], []);
  assert.equal(await context.hostOS.readFile(kubeProxyPendingKeyPath), undefined, 'no key made');
});

test('cleanup removes kube-proxy’s kubeconfig and its pending key, also where C:\\k was there before', async (t) => {
  const { machine, context, stdout } = await bootstrapped(t, async (m) => {
    await m.fs.mkdir('C:\\k', { recursive: true });
  });
  await machine.fs.writeFileAtomic(paths.kubeProxyKubeconfig, 'kubeconfig');
  await machine.fs.writeFileAtomic(kubeProxyPendingKeyPath, 'key');
  stdout.length = 0;
  assert.equal(await runAgent(['cleanup'], context), 0, stdout.join(''));
  assert.equal(await machine.fs.stat(paths.kubeProxyKubeconfig), undefined);
  assert.equal(await machine.fs.stat(kubeProxyPendingKeyPath), undefined);
  assert.ok(await machine.fs.stat('C:\\k'), 'the C:\\k that was there stays');
});
