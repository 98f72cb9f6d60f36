import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  calicoDs,
  calicoWindowsDs,
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

test('Calico through the Tigera operator: its Windows DaemonSet, encapsulation and CNI directories', () => {
  const detected = detect(
    view({ daemonSets: [calicoDs, calicoWindowsDs], tigeraInstallation: tigeraInstallation() }),
  );
  assert.deepEqual(
    detected.cnis.map((c) => [c.id, c.daemonSets, c.windows?.name, c.where]),
    [
      [
        'calico',
        ['calico-system/calico-node', 'calico-system/calico-node-windows'],
        'calico-node-windows',
        'DaemonSets calico-system/calico-node, calico-system/calico-node-windows',
      ],
    ],
  );
  assert.deepEqual(detected.calico, {
    installation: 'found',
    windowsDataplane: 'HNS',
    encapsulation: 'VXLAN',
    cniConfDir: '/etc/cni/net.d',
    cniBinDir: '/opt/cni/bin',
    dirsFrom:
      'the hostPath volumes cni-net-dir and cni-bin-dir of DaemonSet calico-system/calico-node-windows',
  });
});

test("without the Windows DaemonSet the directories come from the Installation, else the operator's defaults per provider", () => {
  const spec = { windowsNodes: { cniConfigDir: '/k/cni/config', cniBinDir: '/k/cni/bin' } };
  const set = detect(
    view({ daemonSets: [calicoDs], tigeraInstallation: tigeraInstallation(spec) }),
  );
  assert.equal(set.cnis[0]!.windows, undefined);
  assert.equal(set.calico?.cniConfDir, '/k/cni/config');
  assert.equal(set.calico?.cniBinDir, '/k/cni/bin');
  const aks = detect(
    view({
      daemonSets: [calicoDs],
      tigeraInstallation: tigeraInstallation({ kubernetesProvider: 'AKS' }),
    }),
  );
  assert.equal(aks.calico?.cniConfDir, '/k/azurecni/netconf');
  const refused = detect(
    view({
      daemonSets: [calicoDs],
      tigeraInstallation: {
        state: 'unreadable',
        why: 'get installations.operator.tigera.io default was refused (403)',
      },
    }),
  );
  assert.deepEqual(refused.calico, {
    installation: 'unreadable',
    installationWhy: 'get installations.operator.tigera.io default was refused (403)',
  });
});

test('a look-alike DaemonSet outside its CNI’s namespaces is ignored and listed', () => {
  const fake = daemonSet('team-a/calico-node-windows', { os: 'windows', hostProcess: true });
  const fakeFlannel = daemonSet('team-a/kube-flannel-ds', {
    images: ['docker.io/flannel/flannel:v0.28.10'],
  });
  const detected = detect(view({ daemonSets: [fake, fakeFlannel] }));
  assert.deepEqual(detected.cnis, []);
  assert.deepEqual(detected.ignored, [
    "DaemonSet team-a/calico-node-windows looks like Calico's, which runs in calico-system or kube-system: ignored",
    "DaemonSet team-a/kube-flannel-ds looks like Flannel's, which runs in kube-flannel or kube-system: ignored",
  ]);
  // Beside the real Calico, the fake does not become its Windows component.
  const beside = detect(view({ daemonSets: [calicoDs, fake] }));
  assert.equal(beside.cnis[0]!.windows, undefined);
});

test('a look-alike image in a CNI namespace counts; Canal is Canal though it runs flannel’s image', () => {
  const renamed = daemonSet('kube-system/pod-network', {
    images: ['rancher/hardened-flannel:v0.28.10-build20260801'],
  });
  assert.deepEqual(
    detect(view({ daemonSets: [renamed] })).cnis.map((c) => c.id),
    ['flannel'],
  );
  const canal = daemonSet('kube-system/rke2-canal', {
    images: ['rancher/hardened-calico:v3.31.0', 'rancher/hardened-flannel:v0.28.10'],
  });
  assert.deepEqual(
    detect(view({ daemonSets: [canal] })).cnis.map((c) => c.id),
    ['canal'],
  );
});

test("Flannel's ConfigMap is read only where network.flannel.configMap says", () => {
  const text = netConf({ Type: 'vxlan', VNI: 4096, Port: 4789 });
  const elsewhere = { ...flannelConfigMap(text), namespace: 'team-a' };
  const detected = detect(view({ flannelConfigMaps: [elsewhere] }));
  assert.deepEqual(detected.cnis, []);
  assert.equal(detected.flannel, undefined);
  assert.match(
    detected.ignored[0]!,
    /^ConfigMap team-a\/kube-flannel-cfg: not where network\.flannel\.configMap says/,
  );
  // Configured: only that namespace counts, kube-flannel's is then ignored.
  const configured = networkConfig({
    flannel: { configMap: { namespace: 'team-a', name: 'kube-flannel-cfg' } },
  });
  const read = detect(view({ flannelConfigMaps: [elsewhere, flannelConfigMap(text)] }), configured);
  assert.equal(read.flannel?.state, 'read');
  assert.equal(
    read.flannel?.state === 'read' && read.flannel.source,
    'ConfigMap team-a/kube-flannel-cfg',
  );
  assert.match(read.ignored.join('\n'), /ConfigMap kube-flannel\/kube-flannel-cfg: not where/);
});

test('two differing net-conf.json: the one beside flanneld’s DaemonSet, else a problem naming both', () => {
  const a = flannelConfigMap(netConf({ Type: 'vxlan', VNI: 4096, Port: 4789 }), 'kube-flannel');
  const b = flannelConfigMap(netConf({ Type: 'host-gw' }), 'kube-system');
  const beside = detect(view({ daemonSets: [flannelDs], flannelConfigMaps: [a, b] }));
  assert.equal(
    beside.flannel?.state === 'read' && beside.flannel.source,
    'ConfigMap kube-flannel/kube-flannel-cfg',
  );
  const neither = detect(view({ flannelConfigMaps: [a, b] }));
  assert.equal(neither.flannel?.state, 'problem');
  assert.match(
    neither.flannel?.state === 'problem' ? neither.flannel.problem : '',
    /ConfigMaps kube-flannel\/kube-flannel-cfg and kube-system\/kube-flannel-cfg both hold a net-conf\.json, and they differ/,
  );
  // The same text twice is no problem.
  const same = detect(view({ flannelConfigMaps: [a, { ...a, namespace: 'kube-system' }] }));
  assert.equal(same.flannel?.state, 'read');
});

test('Flannel running without its ConfigMap, or a ConfigMap without net-conf.json, is a problem saying where to look', () => {
  const mounted = { ...flannelDs, configMaps: ['my-flannel-cfg'] };
  const missing = detect(view({ daemonSets: [mounted] }));
  assert.equal(missing.flannel?.state, 'problem');
  if (missing.flannel?.state !== 'problem') return;
  assert.match(
    missing.flannel.problem,
    /no ConfigMap kube-flannel\/kube-flannel-cfg or kube-system\/kube-flannel-cfg; its DaemonSet mounts ConfigMap my-flannel-cfg/,
  );
  assert.match(missing.flannel.fix, /network\.flannel\.configMap .* e\.g\. name: my-flannel-cfg/);
  const noKey = detect(
    view({
      flannelConfigMaps: [
        { namespace: 'kube-flannel', name: 'kube-flannel-cfg', data: { 'cni-conf.json': '{}' } },
      ],
    }),
  );
  assert.match(
    noKey.flannel?.state === 'problem' ? noKey.flannel.problem : '',
    /has no key net-conf\.json \(it has "cni-conf\.json"\)/,
  );
});

test("Flannel's Windows DaemonSet, kube-proxy-windows and OpenShift's hybrid overlay are seen", () => {
  const detected = detect(
    view({
      daemonSets: [flannelDs, flannelWindowsDs, kubeProxyWindowsDs],
      flannelConfigMaps: [flannelConfigMap(netConf({ Type: 'vxlan', VNI: 4096, Port: 4789 }))],
    }),
  );
  assert.equal(detected.cnis[0]!.windows?.name, 'kube-flannel-ds-windows-amd64');
  assert.equal(detected.kubeProxyWindows, 'kube-system/kube-proxy-windows');
  const hybrid = {
    state: 'found' as const,
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
  assert.equal(
    detect(view({ daemonSets: [ovnDs], openshiftNetwork: hybrid })).ovn?.hybridOverlay,
    true,
  );
  assert.equal(
    detect(
      view({ daemonSets: [ovnDs], openshiftNetwork: { state: 'found', object: { spec: {} } } }),
    ).ovn?.hybridOverlay,
    false,
  );
  assert.equal(detect(view({ daemonSets: [ovnDs] })).ovn?.hybridOverlay, undefined);
});

test('network.external.daemonSet is looked up by namespace/name, wherever it is', () => {
  const mine = daemonSet('my-cni/my-cni-windows', { os: 'windows', hostProcess: true });
  const config = networkConfig({
    mode: 'external',
    external: { daemonSet: 'my-cni/my-cni-windows' },
  });
  assert.equal(
    detect(view({ daemonSets: [mine] }), config).externalDaemonSet?.daemonSet?.name,
    'my-cni-windows',
  );
  assert.deepEqual(detect(view(), config).externalDaemonSet, { ref: 'my-cni/my-cni-windows' });
});
