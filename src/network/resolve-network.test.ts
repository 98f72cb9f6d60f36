import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NetworkResolution, ResolvedNetwork } from '../api/network-mode.ts';
import { usesHnsOverlay } from '../api/network-mode.ts';
import { JoinFailureReason } from '../api/reasons.ts';
import {
  antreaDs,
  antreaWindowsDs,
  calicoDs,
  calicoWindowsDs,
  ciliumDs,
  daemonSet,
  detect,
  flannelConfigMap,
  flannelDs,
  flannelWindowsDs,
  kubeProxyWindowsDs,
  netConf,
  networkConfig,
  ovnDs,
  tigeraInstallation,
  view,
} from './cluster-fixtures.ts';
import type { ClusterView } from './cluster-view.ts';
import { type NetworkConfig, resolveNetwork } from './resolve-network.ts';

const resolve = (v: ClusterView, config: NetworkConfig = networkConfig()) =>
  resolveNetwork(config, detect(v, config));

function joined(resolution: NetworkResolution): ResolvedNetwork & { warnings: string[] } {
  assert.ok(resolution.ok, resolution.ok ? '' : resolution.message);
  return { ...resolution.network, warnings: resolution.warnings ?? [] };
}
function refused(resolution: NetworkResolution, reason: string) {
  assert.ok(!resolution.ok, `expected a refusal, got ${JSON.stringify(resolution)}`);
  assert.equal(resolution.reason, reason, resolution.message);
  assert.equal(resolution.message, `${resolution.seen}. ${resolution.fix}`);
  return resolution;
}

const flannel = (backend: object, extra: Partial<ClusterView> = {}) =>
  view({
    daemonSets: [flannelDs],
    flannelConfigMaps: [flannelConfigMap(netConf(backend))],
    ...extra,
  });
const calico = (spec?: object, windows = true, extra: Partial<ClusterView> = {}) =>
  view({
    daemonSets: [calicoDs, ...(windows ? [calicoWindowsDs] : [])],
    tigeraInstallation: tigeraInstallation(spec),
    ...extra,
  });

test('auto on Flannel VXLAN with VNI 4096 and port 4789 joins flannel-vxlan with what net-conf.json says', () => {
  const text = netConf({ Type: 'vxlan', VNI: 4096, Port: 4789 });
  const network = joined(resolve(flannel({ Type: 'vxlan', VNI: 4096, Port: 4789 })));
  assert.deepEqual(network, {
    mode: 'flannel-vxlan',
    detected: 'Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)',
    flannel: {
      backend: 'vxlan',
      vni: 4096,
      port: 4789,
      network: '10.244.0.0/16',
      netConf: text,
      source: 'ConfigMap kube-flannel/kube-flannel-cfg',
    },
    warnings: [],
  });
  assert.equal(usesHnsOverlay(network), true);
  assert.equal(
    joined(
      resolve(
        flannel({ Type: 'vxlan', VNI: 4096, Port: 4789 }),
        networkConfig({ mode: 'flannel-vxlan' }),
      ),
    ).mode,
    'flannel-vxlan',
  );
});

test("Flannel's Linux defaults (VNI 1, port 8472) are refused naming Backend.VNI, Backend.Port, the ConfigMap and the fix", () => {
  for (const backend of [{ Type: 'vxlan' }, { Type: 'vxlan', VNI: 1, Port: 8472 }]) {
    for (const mode of ['auto', 'flannel-vxlan'] as const) {
      const r = refused(
        resolve(flannel(backend), networkConfig({ mode })),
        JoinFailureReason.NetworkUnsupported,
      );
      assert.match(
        r.seen,
        new RegExp(
          `^network\\.mode is ${mode}, and the cluster runs Flannel VXLAN \\(ConfigMap kube-flannel/kube-flannel-cfg\\)`,
        ),
      );
      assert.match(r.seen, /Backend\.VNI .*1/);
      assert.match(r.seen, /Backend\.Port .*8472/);
      assert.match(
        r.fix,
        /"Backend": \{"Type": "vxlan", "VNI": 4096, "Port": 4789\} in net-conf\.json of ConfigMap kube-flannel\/kube-flannel-cfg/,
      );
    }
  }
  refused(
    resolve(flannel({ Type: 'vxlan', VNI: 4096, Port: 8472 })),
    JoinFailureReason.NetworkUnsupported,
  );
  // A net-conf.json that is not valid is refused naming the field, not guessed at.
  const bad = view({
    daemonSets: [flannelDs],
    flannelConfigMaps: [flannelConfigMap('{"Backend": {"Type": "vxlan"}}')],
  });
  assert.match(
    refused(resolve(bad), JoinFailureReason.NetworkUnsupported).seen,
    /net-conf\.json of ConfigMap kube-flannel\/kube-flannel-cfg is not valid: Network: missing/,
  );
});

test('host-gw joins flannel-host-gw only; the backends Windows lacks are refused', () => {
  assert.equal(joined(resolve(flannel({ Type: 'host-gw' }))).mode, 'flannel-host-gw');
  const hostGw = joined(
    resolve(flannel({ Type: 'host-gw' }), networkConfig({ mode: 'flannel-host-gw' })),
  );
  assert.equal(hostGw.flannel?.backend, 'host-gw');
  assert.equal(usesHnsOverlay(hostGw), false);
  const wrong = refused(
    resolve(flannel({ Type: 'host-gw' }), networkConfig({ mode: 'flannel-vxlan' })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    wrong.seen,
    /^network\.mode is flannel-vxlan, but the cluster runs Flannel host-gw \(ConfigMap kube-flannel\/kube-flannel-cfg\) \(Backend\.Type "host-gw"\)$/,
  );
  assert.match(wrong.fix, /Set network\.mode: flannel-host-gw/);
  refused(
    resolve(
      flannel({ Type: 'vxlan', VNI: 4096, Port: 4789 }),
      networkConfig({ mode: 'flannel-host-gw' }),
    ),
    JoinFailureReason.NetworkModeMismatch,
  );
  for (const type of ['wireguard', 'udp', 'ipip']) {
    const r = refused(resolve(flannel({ Type: type })), JoinFailureReason.NetworkUnsupported);
    assert.match(r.seen, /only the vxlan and host-gw backends/);
  }
});

test('flannel-vxlan on a Calico cluster is refused naming both and the fix', () => {
  const r = refused(
    resolve(calico(), networkConfig({ mode: 'flannel-vxlan' })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.equal(
    r.seen,
    'network.mode is flannel-vxlan, but Flannel does not run in the cluster: it shows Calico (DaemonSets calico-system/calico-node, calico-system/calico-node-windows)',
  );
  assert.match(r.fix, /^Set network\.mode to external \(or auto\) in winfleet-config/);
});

test("Flannel's own Windows DaemonSet: auto joins external; a flannel mode is refused (two flanneld on a node)", () => {
  const cluster = flannel(
    { Type: 'vxlan', VNI: 4096, Port: 4789 },
    { daemonSets: [flannelDs, flannelWindowsDs] },
  );
  const ext = joined(resolve(cluster));
  assert.equal(ext.mode, 'external');
  assert.equal(ext.external?.windowsDaemonSet, 'kube-flannel/kube-flannel-ds-windows-amd64');
  assert.equal(ext.external?.networkName, 'flannel.4096');
  assert.equal(ext.external?.overlay, true);
  const r = refused(
    resolve(cluster, networkConfig({ mode: 'flannel-vxlan' })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    r.seen,
    /Flannel's own Windows DaemonSet kube-flannel\/kube-flannel-ds-windows-amd64 runs flanneld/,
  );
  assert.match(r.fix, /network\.mode: external/);
});

test('Calico with calico-node-windows joins external: VXLAN is an overlay, dirs match, winfleet’s kube-proxy on the Calico network', () => {
  for (const mode of ['auto', 'external'] as const) {
    const network = joined(resolve(calico(), networkConfig({ mode })));
    assert.deepEqual(network, {
      mode: 'external',
      detected: 'Calico with Windows DaemonSet calico-system/calico-node-windows',
      external: {
        cni: 'Calico',
        cniConfDir: 'C:\\etc\\cni\\net.d',
        cniBinDir: 'C:\\opt\\cni\\bin',
        kubeProxy: true,
        networkName: 'Calico',
        windowsDaemonSet: 'calico-system/calico-node-windows',
        overlay: true,
      },
      warnings: [],
    });
  }
  const bgp = joined(
    resolve(
      calico({
        calicoNetwork: {
          windowsDataplane: 'HNS',
          ipPools: [{ cidr: '192.168.0.0/16', encapsulation: 'None' }],
        },
      }),
    ),
  );
  assert.equal(usesHnsOverlay(bgp), false);
  // kube-proxy-windows brings kube-proxy: winfleet's is off.
  const withProxy = joined(
    resolve(
      calico(undefined, true, { daemonSets: [calicoDs, calicoWindowsDs, kubeProxyWindowsDs] }),
    ),
  );
  assert.equal(withProxy.external?.kubeProxy, false);
  assert.deepEqual(withProxy.warnings, []);
});

test('Calico without calico-node-windows is refused naming it and the Installation fields', () => {
  const r = refused(
    resolve(
      calico(
        { calicoNetwork: { ipPools: [{ cidr: '192.168.0.0/16', encapsulation: 'VXLAN' }] } },
        false,
      ),
      networkConfig({ mode: 'external' }),
    ),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    r.seen,
    /^network\.mode is external, and the cluster runs Calico \(DaemonSet calico-system\/calico-node\), but no Windows DaemonSet of it \(calico-node-windows in calico-system\)/,
  );
  assert.match(
    r.fix,
    /spec\.calicoNetwork\.windowsDataplane: HNS \(it is unset, which means Disabled\), spec\.serviceCIDRs, and spec\.windowsNodes\.cniConfigDir/,
  );
  // A namespace admin's look-alike does not stand in for it, and the message says it was ignored.
  const fake = daemonSet('team-a/calico-node-windows', { os: 'windows', hostProcess: true });
  const faked = refused(
    resolve(calico(undefined, false, { daemonSets: [calicoDs, fake] })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    faked.seen,
    /DaemonSet team-a\/calico-node-windows looks like Calico's, which runs in calico-system or kube-system: ignored/,
  );
});

test("external refuses a CNI whose directories are not containerd's, naming both and each fix", () => {
  const spec = { windowsNodes: { cniConfigDir: '/k/cni/config', cniBinDir: '/opt/cni/bin' } };
  const windows = {
    ...calicoWindowsDs,
    hostPaths: { 'cni-bin-dir': '/opt/cni/bin', 'cni-net-dir': '/k/cni/config' },
  };
  const cluster = calico(spec, false, { daemonSets: [calicoDs, windows] });
  const r = refused(resolve(cluster), JoinFailureReason.NetworkModeMismatch);
  assert.match(
    r.seen,
    /Calico's Windows DaemonSet calico-system\/calico-node-windows puts its CNI configuration in C:\\k\\cni\\config \(the hostPath volumes cni-net-dir and cni-bin-dir of DaemonSet calico-system\/calico-node-windows\), but containerd on winfleet's nodes looks in C:\\etc\\cni\\net\.d \(network\.external\.cniConfDir\)/,
  );
  assert.match(
    r.fix,
    /network\.external\.cniConfDir: "C:\\\\k\\\\cni\\\\config".*Installation default spec\.windowsNodes\.cniConfigDir to C:\\etc\\cni\\net\.d/,
  );
  const agreed = networkConfig({ external: { cniConfDir: 'C:\\k\\cni\\config' } });
  assert.equal(joined(resolve(cluster, agreed)).external?.cniConfDir, 'C:\\k\\cni\\config');
});

test('Calico encapsulations Windows lacks are refused; an unreadable Installation only warns', () => {
  for (const encapsulation of ['IPIP', 'VXLANCrossSubnet']) {
    const r = refused(
      resolve(
        calico({
          calicoNetwork: {
            windowsDataplane: 'HNS',
            ipPools: [{ cidr: '192.168.0.0/16', encapsulation }],
          },
        }),
      ),
      JoinFailureReason.NetworkUnsupported,
    );
    assert.match(r.seen, new RegExp(`encapsulation ${encapsulation}`));
  }
  const unreadable = joined(
    resolve(
      view({
        daemonSets: [calicoDs, calicoWindowsDs],
        tigeraInstallation: { state: 'unreadable', why: 'refused (403)' },
      }),
    ),
  );
  assert.equal(unreadable.external?.overlay, undefined);
  assert.match(
    unreadable.warnings.join('\n'),
    /Calico's encapsulation is not known \(Installation default could not be read: refused \(403\)\)/,
  );
});

test('Antrea joins external with its hard-coded directories and no kube-proxy; without antrea-agent-windows it is refused', () => {
  const network = joined(resolve(view({ daemonSets: [antreaDs, antreaWindowsDs] })));
  assert.equal(network.external?.kubeProxy, false);
  assert.equal(network.external?.networkName, 'antrea-hnsnetwork');
  assert.equal(network.external?.overlay, false);
  assert.deepEqual(network.warnings, []);
  const on = joined(
    resolve(
      view({ daemonSets: [antreaDs, antreaWindowsDs] }),
      networkConfig({ external: { kubeProxy: 'on' } }),
    ),
  );
  assert.match(on.warnings.join('\n'), /Antrea proxies Services on Windows itself/);
  const elsewhere = networkConfig({ external: { cniBinDir: 'C:\\k\\cni\\bin' } });
  assert.match(
    refused(
      resolve(view({ daemonSets: [antreaDs, antreaWindowsDs] }), elsewhere),
      JoinFailureReason.NetworkModeMismatch,
    ).seen,
    /puts its CNI plugins in C:\\opt\\cni\\bin \(Antrea's Install-WindowsCNI\.ps1/,
  );
  const r = refused(
    resolve(view({ daemonSets: [antreaDs] })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(r.seen, /no Windows DaemonSet of it \(kube-system\/antrea-agent-windows\)/);
  assert.match(r.fix, /antrea-windows-with-ovs\.yml/);
});

test('auto refuses a cluster with no CNI it recognises, several CNIs, or a CNI without Windows support', () => {
  const none = refused(
    resolve(view({ daemonSets: [daemonSet('kube-system/kube-proxy')] })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    none.seen,
    /^network\.mode is auto, and the cluster shows no CNI winfleet recognises .* among 1 DaemonSet\(s\)\)$/,
  );
  assert.match(
    none.fix,
    /^Set network\.mode in winfleet-config: routed if your network routes each node’s spec\.podCIDR/,
  );
  const two = refused(
    resolve(view({ daemonSets: [calicoDs, antreaDs] })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    two.seen,
    /more than one CNI: Calico \(DaemonSet calico-system\/calico-node\), Antrea \(DaemonSet kube-system\/antrea-agent\)/,
  );
  const cilium = refused(
    resolve(view({ daemonSets: [ciliumDs] })),
    JoinFailureReason.NetworkUnsupported,
  );
  assert.match(
    cilium.seen,
    /Cilium \(DaemonSet kube-system\/cilium\), which has no Windows data plane/,
  );
  assert.match(cilium.fix, /network\.mode: routed only if Cilium/);
});

test('external for a CNI winfleet does not know: network.external.daemonSet, its hostPath directories', () => {
  const mine = daemonSet('my-cni/my-cni-windows', {
    os: 'windows',
    hostProcess: true,
    hostPaths: { 'cni-conf': 'C:\\etc\\cni\\net.d', 'cni-bin': 'C:\\opt\\cni\\bin' },
  });
  const config = networkConfig({
    mode: 'external',
    external: { daemonSet: 'my-cni/my-cni-windows', networkName: 'my-net' },
  });
  const network = joined(resolve(view({ daemonSets: [mine] }), config));
  assert.equal(network.external?.cni, 'the CNI of DaemonSet my-cni/my-cni-windows');
  assert.equal(network.external?.networkName, 'my-net');
  assert.equal(network.external?.overlay, undefined);
  assert.deepEqual(network.warnings, []);
  const blind = joined(resolve(view({ daemonSets: [{ ...mine, hostPaths: {} }] }), config));
  assert.match(
    blind.warnings.join('\n'),
    /Cannot tell where my-cni\/my-cni-windows puts its CNI configuration/,
  );
  assert.match(
    refused(resolve(view(), config), JoinFailureReason.NetworkModeMismatch).seen,
    /network\.external\.daemonSet is my-cni\/my-cni-windows, but there is no DaemonSet my-cni\/my-cni-windows/,
  );
  assert.match(
    refused(
      resolve(view({ daemonSets: [{ ...mine, os: 'linux' }] }), config),
      JoinFailureReason.NetworkModeMismatch,
    ).seen,
    /is placed on Linux nodes/,
  );
  const off = networkConfig({
    mode: 'external',
    external: { daemonSet: 'my-cni/my-cni-windows', kubeProxy: 'off' },
  });
  assert.match(
    joined(resolve(view({ daemonSets: [mine] }), off)).warnings.join('\n'),
    /Services will not work from Windows pods/,
  );
});

test('external on Flannel without a Windows DaemonSet, or on OVN-Kubernetes, points at the mode that joins it', () => {
  const f = refused(
    resolve(flannel({ Type: 'vxlan', VNI: 4096, Port: 4789 }), networkConfig({ mode: 'external' })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(f.fix, /flannel-vxlan or flannel-host-gw/);
  const o = refused(
    resolve(view({ daemonSets: [ovnDs] }), networkConfig({ mode: 'external' })),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(o.fix, /network\.mode: ovn-hybrid/);
});

test('OpenShift: ovn-hybrid with the hybrid overlay (VNI 4097); refused without it; ovn-hybrid elsewhere is a mismatch', () => {
  const hybrid: ClusterView['openshiftNetwork'] = {
    state: 'found',
    object: {
      spec: {
        defaultNetwork: {
          ovnKubernetesConfig: {
            hybridOverlayConfig: {
              hybridClusterNetwork: [{ cidr: '10.132.0.0/14', hostPrefix: 23 }],
            },
          },
        },
      },
    },
  };
  const network = joined(resolve(view({ daemonSets: [ovnDs], openshiftNetwork: hybrid })));
  assert.equal(network.mode, 'ovn-hybrid');
  assert.deepEqual(network.ovnHybrid, { hybridOverlayVni: 4097 });
  assert.equal(usesHnsOverlay(network), true);
  const without = refused(
    resolve(
      view({ daemonSets: [ovnDs], openshiftNetwork: { state: 'found', object: { spec: {} } } }),
    ),
    JoinFailureReason.NetworkUnsupported,
  );
  assert.match(without.fix, /cannot be switched on after/);
  assert.match(
    joined(resolve(view({ daemonSets: [ovnDs] }))).warnings.join('\n'),
    /Cannot tell whether hybrid networking is configured/,
  );
  refused(
    resolve(calico(), networkConfig({ mode: 'ovn-hybrid' })),
    JoinFailureReason.NetworkModeMismatch,
  );
});

test('routed: never picked by auto; when configured, it warns that it cannot be verified, and refuses a CNI that does not route', () => {
  const bare = resolve(view(), networkConfig({ mode: 'routed' }));
  const network = joined(bare);
  assert.equal(network.mode, 'routed');
  assert.match(
    network.warnings[0]!,
    /^network\.mode is routed, which winfleet cannot verify .*: make sure your network routes every node's spec\.podCIDR/,
  );
  assert.equal(usesHnsOverlay(network), false);
  for (const cluster of [
    flannel({ Type: 'host-gw' }),
    flannel({ Type: 'vxlan', VNI: 4096, Port: 4789 }),
    calico(),
    view({ daemonSets: [antreaDs] }),
  ]) {
    const r = refused(
      resolve(cluster, networkConfig({ mode: 'routed' })),
      JoinFailureReason.NetworkModeMismatch,
    );
    assert.match(
      r.seen,
      /^network\.mode is routed, but the cluster's pods use .* which does not route each node's spec\.podCIDR/,
    );
  }
  const bgp = calico({
    calicoNetwork: {
      windowsDataplane: 'HNS',
      ipPools: [{ cidr: '192.168.0.0/16', encapsulation: 'None' }],
    },
  });
  assert.equal(joined(resolve(bgp, networkConfig({ mode: 'routed' }))).mode, 'routed');
  assert.equal(
    joined(
      resolve(
        view({ daemonSets: [daemonSet('kube-system/kube-router')] }),
        networkConfig({ mode: 'routed' }),
      ),
    ).mode,
    'routed',
  );
});

test("a kube-proxy DaemonSet for Windows beside winfleet's own kube-proxy is a warning in the modes that run one", () => {
  const cluster = flannel(
    { Type: 'vxlan', VNI: 4096, Port: 4789 },
    { daemonSets: [flannelDs, kubeProxyWindowsDs] },
  );
  assert.match(
    joined(resolve(cluster)).warnings.join('\n'),
    /DaemonSet kube-system\/kube-proxy-windows runs kube-proxy on Windows nodes, and winfleet runs its own there/,
  );
  const on = networkConfig({ external: { kubeProxy: 'on' } });
  assert.match(
    joined(
      resolve(
        calico(undefined, true, { daemonSets: [calicoDs, calicoWindowsDs, kubeProxyWindowsDs] }),
        on,
      ),
    ).warnings.join('\n'),
    /Delete the DaemonSet, or set network\.external\.kubeProxy: off/,
  );
});

test('external.daemonSet naming a Calico DaemonSet: its own hostPath volumes give the directories; Calico from manifests warns that its encapsulation is not read', () => {
  const own = {
    ...calicoWindowsDs,
    namespace: 'calico-win',
    hostPaths: { 'cni-bin-dir': '/k/cni/bin', 'cni-net-dir': '/k/cni/config' },
  };
  const config = networkConfig({
    mode: 'external',
    external: { daemonSet: 'calico-win/calico-node-windows', cniConfDir: 'C:\\k\\cni\\config' },
  });
  const r = refused(
    resolve(view({ daemonSets: [calicoDs, calicoWindowsDs, own] }), config),
    JoinFailureReason.NetworkModeMismatch,
  );
  assert.match(
    r.seen,
    /puts its CNI plugins in C:\\k\\cni\\bin \(the hostPath volumes of DaemonSet calico-win\/calico-node-windows\)/,
  );
  const manifests = joined(resolve(view({ daemonSets: [calicoDs, calicoWindowsDs] })));
  assert.match(
    manifests.warnings.join('\n'),
    /no Tigera operator Installation: Calico from manifests is not read/,
  );
});
