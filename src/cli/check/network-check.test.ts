import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import type { NetworkConfig } from '../../config/winfleet-config.ts';
import {
  antreaDs,
  antreaWindowsDs,
  calicoDs,
  calicoWindowsDs,
  detect,
  flannelConfigMap,
  flannelDs,
  kubeProxyWindowsDs,
  netConf,
  tigeraInstallation,
  view,
} from '../../network/cluster-fixtures.ts';
import type { ClusterView } from '../../network/cluster-view.ts';
import { resolveNetwork } from '../../network/resolve-network.ts';
import { patchLevel } from './host-checks.ts';
import {
  type CheckNetworkConfig,
  checkNetworkConfig,
  networkVerdict,
  networkWithoutCluster,
} from './network-check.ts';

const apiError = (code: number) => Object.assign(new Error(`HTTP ${code}`), { code });
const reader =
  (answer: k8s.V1ConfigMap | number) =>
  async (name: string, namespace: string): Promise<k8s.V1ConfigMap> => {
    assert.equal(name, 'winfleet-config');
    assert.equal(namespace, 'winfleet-system');
    if (typeof answer === 'number') throw apiError(answer);
    return answer;
  };
const configMap = (text?: string): k8s.V1ConfigMap => ({
  metadata: { name: 'winfleet-config', namespace: 'winfleet-system' },
  data: text === undefined ? { 'config.yml': 'x' } : { 'config.yaml': text },
});

test("the network configuration is the operator's: its ConfigMap, else the defaults; --network-mode replaces the mode", async () => {
  const none = await checkNetworkConfig(reader(404), 'winfleet-system', undefined);
  assert.equal(none.config.mode, 'auto');
  assert.equal(
    none.source,
    'network.mode auto (the defaults: no ConfigMap winfleet-system/winfleet-config)',
  );
  assert.equal(none.caveat, undefined);
  const set = await checkNetworkConfig(
    reader(configMap('network:\n  mode: external\n  external: { cniConfDir: "D:\\\\cni" }\n')),
    'winfleet-system',
    undefined,
  );
  assert.equal(set.config.mode, 'external');
  assert.equal(set.config.external.cniConfDir, 'D:\\cni');
  assert.equal(set.source, 'network.mode external (ConfigMap winfleet-system/winfleet-config)');
  const flag = await checkNetworkConfig(
    reader(configMap('network: {mode: external}')),
    'winfleet-system',
    'routed',
  );
  assert.equal(flag.config.mode, 'routed');
  assert.match(
    flag.source,
    /^network\.mode routed \(--network-mode; the rest of network from ConfigMap winfleet-system\/winfleet-config\)$/,
  );
  const refused = await checkNetworkConfig(reader(403), 'winfleet-system', undefined);
  assert.match(refused.caveat ?? '', /could not be read \(403\)/);
  const noKey = await checkNetworkConfig(reader(configMap()), 'winfleet-system', undefined);
  assert.match(noKey.caveat ?? '', /has no key config\.yaml/);
  const invalid = await checkNetworkConfig(
    reader(configMap('network: {mode: flannel}')),
    'winfleet-system',
    undefined,
  );
  assert.match(invalid.invalid?.join('\n') ?? '', /network\.mode: must be one of/);
  await assert.rejects(checkNetworkConfig(reader(500), 'winfleet-system', undefined), /HTTP 500/);
});

const configured = (
  mode: NetworkConfig['mode'],
  extra: Partial<CheckNetworkConfig> = {},
): CheckNetworkConfig => ({
  config: {
    mode,
    flannel: { configMap: { name: 'kube-flannel-cfg' } },
    external: {
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      kubeProxy: 'auto',
    },
  },
  source: `network.mode ${mode} (the defaults: no ConfigMap winfleet-system/winfleet-config)`,
  ...extra,
});
const verdict = (c: CheckNetworkConfig, v: ClusterView) => {
  const detected = detect(v, c.config);
  return networkVerdict(c, { detected, resolution: resolveNetwork(c.config, detected) });
};
const flannel = (backend: object, extra: Partial<ClusterView> = {}) =>
  view({
    daemonSets: [flannelDs],
    flannelConfigMaps: [flannelConfigMap(netConf(backend))],
    ...extra,
  });
const good = { Type: 'vxlan', VNI: 4096, Port: 4789 };

test('Flannel VXLAN 4096/4789 passes only in flannel-vxlan and auto; the host checks learn it is an overlay', () => {
  for (const mode of ['auto', 'flannel-vxlan'] as const) {
    const { result, network } = verdict(configured(mode), flannel(good));
    assert.equal(result.status, 'pass', result.message);
    assert.match(
      result.message,
      /^Flannel VXLAN \(ConfigMap kube-flannel\/kube-flannel-cfg\): .*\(VNI 4096, UDP port 4789, Network 10\.244\.0\.0\/16\)/,
    );
    assert.deepEqual(network, {
      overlay: true,
      seen: 'Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)',
    });
  }
  for (const mode of ['flannel-host-gw', 'external', 'ovn-hybrid', 'routed'] as const) {
    const { result } = verdict(configured(mode), flannel(good));
    assert.equal(result.status, 'fail', `${mode}: ${result.message}`);
    assert.match(result.message, new RegExp(`^network\\.mode is ${mode}`));
    assert.notEqual(result.fix, '');
  }
});

test("Flannel's Linux defaults fail, naming Backend.VNI and Backend.Port; host-gw passes only in flannel-host-gw (or auto)", () => {
  const { result } = verdict(configured('auto'), flannel({ Type: 'vxlan' }));
  assert.equal(result.status, 'fail');
  assert.match(result.message, /Backend\.VNI is not set: Linux flanneld then uses VNI 1/);
  assert.match(result.message, /Backend\.Port is not set: Linux flanneld then uses UDP 8472/);
  assert.match(result.fix, /"VNI": 4096, "Port": 4789/);
  const hostGw = verdict(configured('flannel-host-gw'), flannel({ Type: 'host-gw' }));
  assert.equal(hostGw.result.status, 'pass');
  assert.equal(hostGw.network.overlay, false);
  assert.equal(
    verdict(configured('flannel-vxlan'), flannel({ Type: 'host-gw' })).result.status,
    'fail',
  );
});

test('Calico and Antrea pass in external only with their Windows DaemonSet; without it the check fails naming it', () => {
  const calico = view({
    daemonSets: [calicoDs, calicoWindowsDs],
    tigeraInstallation: tigeraInstallation(),
  });
  const ok = verdict(configured('external'), calico);
  assert.equal(ok.result.status, 'pass', ok.result.message);
  assert.equal(ok.network.overlay, true);
  const missing = verdict(
    configured('external'),
    view({ daemonSets: [calicoDs], tigeraInstallation: tigeraInstallation() }),
  );
  assert.equal(missing.result.status, 'fail');
  assert.match(missing.result.message, /calico-node-windows/);
  assert.match(missing.result.fix, /windowsDataplane: HNS/);
  const antrea = verdict(configured('auto'), view({ daemonSets: [antreaDs, antreaWindowsDs] }));
  assert.equal(antrea.result.status, 'pass');
  assert.equal(antrea.network.overlay, false);
  assert.equal(verdict(configured('flannel-vxlan'), calico).result.status, 'fail');
});

test('what joins but is not verified warns: routed, a kube-proxy DaemonSet beside winfleet’s, an unreadable configuration', () => {
  const routed = verdict(configured('routed'), view());
  assert.equal(routed.result.status, 'warn');
  assert.match(
    routed.result.message,
    /: routed joins it \[network\.mode routed .*one point not verified or at risk \(see fix\)$/,
  );
  assert.match(routed.result.fix, /make sure your network routes every node's spec\.podCIDR/);
  assert.equal(routed.network.overlay, false);
  const proxy = verdict(
    configured('auto'),
    flannel(good, { daemonSets: [flannelDs, kubeProxyWindowsDs] }),
  );
  assert.equal(proxy.result.status, 'warn');
  assert.match(proxy.result.fix, /kube-proxy-windows/);
  const unread = verdict(
    configured('auto', { caveat: 'ConfigMap x could not be read (403)' }),
    flannel(good),
  );
  assert.equal(unread.result.status, 'warn');
  const invalid = verdict(
    configured('auto', { invalid: ['network.mode: must be one of …'] }),
    flannel(good),
  );
  assert.equal(invalid.result.status, 'fail');
  assert.match(invalid.result.message, /network\.mode: must be one of/);
});

test('a refused network leaves the overlay unknown; without the cluster --network-mode tells the patch-level check', () => {
  const refused = verdict(configured('auto'), view());
  assert.equal(refused.result.status, 'fail');
  assert.equal(refused.network.overlay, undefined);
  const old2019 = {
    hostname: 'WIN-1',
    osVersion: { major: 10, minor: 0, build: 17763, ubr: 300, productName: 'Windows Server 2019' },
    freeBytes: 1e12,
    containersFeature: 'Installed',
  };
  assert.equal(patchLevel(old2019, networkWithoutCluster('flannel-vxlan', 'x')).status, 'fail');
  assert.match(
    patchLevel(old2019, networkWithoutCluster('flannel-vxlan', 'x')).message,
    /--network-mode flannel-vxlan/,
  );
  assert.equal(patchLevel(old2019, networkWithoutCluster('flannel-host-gw', 'x')).status, 'pass');
  assert.equal(patchLevel(old2019, networkWithoutCluster('external', 'x')).status, 'warn');
  assert.equal(
    patchLevel(old2019, networkWithoutCluster(undefined, '--skip-cluster')).status,
    'warn',
  );
});
