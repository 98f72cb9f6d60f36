import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import { parseServicesManifest, serviceCommand } from '../servicesmanifest/services-manifest.ts';
import { servicesManifestFor } from './node-services.ts';

async function payload(t: { after(fn: () => Promise<void>): void }, extraFiles?: string[]) {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-node-services-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return writeStandInPayload(dir, extraFiles ? { extraFiles } : {});
}

const flannel: NodeNetwork = {
  mode: 'flannel-vxlan',
  vni: 4096,
  netConf: '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}',
};

test('routed: kube-proxy on winfleet’s network, no flanneld, the payload’s version', async (t) => {
  const p = await payload(t);
  const manifest = servicesManifestFor(p);
  const proxy = manifest.services.find((s) => s.name === 'kube-proxy')!;
  assert.ok(proxy.args.includes('--network-name=winfleet'));
  assert.equal(
    proxy.args.some((a) => a.startsWith('--source-vip')),
    false,
  );
  assert.equal(
    manifest.services.some((s) => s.name === 'flanneld'),
    false,
  );
  assert.equal(manifest.version, p.version);
  // flanneld.exe is installed all the same (a later mode change needs no new payload).
  assert.ok(manifest.files.some((f) => f.path === 'C:\\k\\flanneld.exe'));
});

test('flannel-vxlan: flanneld through winfleet-service.exe with the node’s credentials, kube-proxy on flannel.4096 with the source VIP', async (t) => {
  const p = await payload(t);
  const manifest = servicesManifestFor(p, { network: flannel });
  const flanneld = manifest.services.find((s) => s.name === 'flanneld')!;
  assert.deepEqual(flanneld.serviceShim, {
    binary: 'C:\\k\\winfleet-service.exe',
    logDir: 'C:\\k\\logs\\flanneld',
    stopTimeout: '10s',
  });
  assert.deepEqual(flanneld.env, { NODE_NAME: '{{nodeName}}' });
  assert.deepEqual(flanneld.dependencies, ['kubelet']);
  assert.deepEqual(serviceCommand(flanneld, flanneld.args), {
    binaryPath: 'C:\\k\\winfleet-service.exe',
    args: [
      '--log-dir',
      'C:\\k\\logs\\flanneld',
      '--stop-timeout',
      '10s',
      '--',
      'C:\\k\\flanneld.exe',
      '--kube-subnet-mgr',
      '--kubeconfig-file=C:\\k\\kubeconfig',
      '--iface={{nodeIP}}',
      '--net-config-path=C:\\k\\flannel\\net-conf.json',
      '--subnet-file=C:\\run\\flannel\\subnet.env',
      '--ip-masq=false',
    ],
  });
  const proxy = manifest.services.find((s) => s.name === 'kube-proxy')!;
  assert.deepEqual(
    proxy.args.filter((a) => /^--(network-name|source-vip)/.test(a)),
    ['--network-name=flannel.4096', '--source-vip={{sourceVip}}'],
  );
  assert.ok(
    manifest.files.some((f) => f.path === 'C:\\k\\winfleet-service.exe'),
    'the shim is a payload file',
  );
  assert.match(manifest.version, new RegExp(`^${p.version.replaceAll('.', '\\.')}-n[0-9a-f]{8}$`));
  // A valid manifest: the shim a payload file, its log directory its own in C:\k\logs.
  parseServicesManifest(JSON.stringify(manifest));
});

test('external: no kube-proxy when the CNI brings its own, or kube-proxy on the CNI’s network; never flanneld', async (t) => {
  const p = await payload(t);
  const dirs = { cniConfDir: 'C:\\etc\\cni\\net.d', cniBinDir: 'C:\\opt\\cni\\bin' };
  const own = servicesManifestFor(p, { network: { mode: 'external', ...dirs, kubeProxy: false } });
  assert.deepEqual(
    own.services.filter((s) => s.name === 'kube-proxy' || s.name === 'flanneld'),
    [],
  );
  const calico = servicesManifestFor(p, {
    network: { mode: 'external', ...dirs, kubeProxy: true, networkName: 'Calico' },
  });
  assert.ok(
    calico.services.find((s) => s.name === 'kube-proxy')!.args.includes('--network-name=Calico'),
  );
  assert.notEqual(own.version, calico.version, 'each network is its own manifest');
});

test('a manifest whose shim is not a payload file, or logs outside C:\\k\\logs, is refused', async (t) => {
  const p = await payload(t);
  const manifest = servicesManifestFor(p, { network: flannel });
  const flanneld = manifest.services.find((s) => s.name === 'flanneld')!;
  const withShim = (shim: object) =>
    JSON.stringify({
      ...manifest,
      services: manifest.services.map((s) => (s === flanneld ? { ...s, serviceShim: shim } : s)),
    });
  assert.throws(
    () =>
      parseServicesManifest(
        withShim({ binary: 'C:\\k\\other.exe', logDir: 'C:\\k\\logs\\flanneld' }),
      ),
    /serviceShim\.binary: "C:\\k\\other\.exe" is not the path of a file of this manifest/,
  );
  assert.throws(
    () =>
      parseServicesManifest(
        withShim({ binary: 'C:\\k\\winfleet-service.exe', logDir: 'C:\\k\\pki' }),
      ),
    /serviceShim\.logDir: "C:\\k\\pki" is not a directory directly in C:\\k\\logs/,
  );
});

test('flannel-host-gw: flanneld as for flannel-vxlan, kube-proxy on cbr0 without a source VIP', async (t) => {
  const p = await payload(t);
  const hostGw: NodeNetwork = {
    mode: 'flannel-host-gw',
    networkName: 'cbr0',
    netConf: '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}',
  };
  const manifest = servicesManifestFor(p, { network: hostGw });
  const flanneld = manifest.services.find((s) => s.name === 'flanneld')!;
  const vxlanFlanneld = servicesManifestFor(p, { network: flannel }).services.find(
    (s) => s.name === 'flanneld',
  )!;
  assert.deepEqual(flanneld, vxlanFlanneld);
  const proxy = manifest.services.find((s) => s.name === 'kube-proxy')!;
  assert.deepEqual(
    proxy.args.filter((a) => /^--(network-name|source-vip)/.test(a)),
    ['--network-name=cbr0'],
  );
  assert.deepEqual(manifest.network, hostGw);
  assert.notEqual(manifest.version, p.version);
  assert.doesNotThrow(() => parseServicesManifest(JSON.stringify(manifest)));
});

test('ovn-hybrid: hybrid-overlay-node as WMCO runs it with the node’s credentials, kube-proxy on the hybrid overlay with the source VIP', async (t) => {
  const p = await payload(t, ['hybrid-overlay-node.exe']);
  const manifest = servicesManifestFor(p, { network: { mode: 'ovn-hybrid' } });
  const hybrid = manifest.services.find((s) => s.name === 'hybrid-overlay-node')!;
  assert.equal(hybrid.binary, 'C:\\k\\hybrid-overlay-node.exe');
  assert.deepEqual(hybrid.args, [
    '--node={{nodeName}}',
    '--k8s-kubeconfig=C:\\k\\kubeconfig',
    '--windows-service',
    '--logfile=C:\\k\\logs\\hybrid-overlay-node.log',
  ]);
  assert.deepEqual(hybrid.dependencies, ['kubelet']);
  assert.equal(hybrid.serviceShim, undefined, 'it is a Windows service itself (--windows-service)');
  assert.equal(
    manifest.services.some((s) => s.name === 'flanneld'),
    false,
  );
  const proxy = manifest.services.find((s) => s.name === 'kube-proxy')!;
  assert.ok(proxy.args.includes('--network-name=OVNKubernetesHybridOverlayNetwork'));
  assert.ok(proxy.args.includes('--source-vip={{sourceVip}}'));
  // The cluster's own VXLAN port reaches hybrid-overlay-node; the default adds no flag.
  const ported = servicesManifestFor(p, { network: { mode: 'ovn-hybrid', vxlanPort: 9789 } });
  assert.ok(
    ported.services
      .find((s) => s.name === 'hybrid-overlay-node')!
      .args.includes('--hybrid-overlay-vxlan-port=9789'),
  );
  assert.notEqual(ported.version, manifest.version);
  // Other modes install the file but run no hybrid-overlay-node.
  assert.equal(
    servicesManifestFor(p, { network: flannel }).services.some(
      (s) => s.name === 'hybrid-overlay-node',
    ),
    false,
  );
});

test('ovn-hybrid with a payload that lacks hybrid-overlay-node.exe is refused, naming how to add it', async (t) => {
  const p = await payload(t);
  assert.throws(
    () => servicesManifestFor(p, { network: { mode: 'ovn-hybrid' } }),
    /has no hybrid-overlay-node\.exe.*WINFLEET_HYBRID_OVERLAY_NODE=<path of hybrid-overlay-node\.exe> make payload/,
  );
});
