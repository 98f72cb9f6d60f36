import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encapsulationPort } from '../servicesmanifest/node-network.ts';
import { hostGwNetworkName, nodeNetworkFor, nodeNetworkState } from './cluster-network-watch.ts';

const netConf = '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}';

test('what a node joins with, per resolved mode: flannel’s VNI and net-conf, a CNI’s directories, routed', () => {
  assert.deepEqual(
    nodeNetworkFor({
      mode: 'flannel-vxlan',
      detected: 'Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)',
      flannel: {
        backend: 'vxlan',
        vni: 4096,
        port: 4789,
        network: '10.244.0.0/16',
        netConf,
        source: 'ConfigMap kube-flannel/kube-flannel-cfg',
      },
    }),
    {
      ok: true,
      network: { mode: 'flannel-vxlan', vni: 4096, netConf },
      detected: 'Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)',
      warnings: [],
    },
  );
  const external = nodeNetworkFor({
    mode: 'external',
    detected: 'Calico',
    external: {
      cni: 'Calico',
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      kubeProxy: false,
      networkName: 'Calico',
    },
  });
  assert.deepEqual(external.ok && external.network, {
    mode: 'external',
    cniConfDir: 'C:\\etc\\cni\\net.d',
    cniBinDir: 'C:\\opt\\cni\\bin',
    kubeProxy: false,
    networkName: 'Calico',
  });
  assert.deepEqual(nodeNetworkFor({ mode: 'routed', detected: 'no CNI' }).ok, true);
});

test('flannel-host-gw joins with flanneld’s L2Bridge network: cbr0, or net-conf.json’s Backend.Name', () => {
  const hostGw = (text: string) =>
    nodeNetworkFor({
      mode: 'flannel-host-gw',
      detected: 'Flannel host-gw (ConfigMap kube-flannel/kube-flannel-cfg)',
      flannel: {
        backend: 'host-gw',
        vni: 0,
        port: 0,
        network: '10.244.0.0/16',
        netConf: text,
        source: 'ConfigMap kube-flannel/kube-flannel-cfg',
      },
    });
  const plain = '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}';
  assert.deepEqual(hostGw(plain), {
    ok: true,
    network: { mode: 'flannel-host-gw', networkName: 'cbr0', netConf: plain },
    detected: 'Flannel host-gw (ConfigMap kube-flannel/kube-flannel-cfg)',
    warnings: [],
  });
  const named = '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw","Name":"pods"}}';
  const state = hostGw(named);
  assert.deepEqual(state.ok && state.network, {
    mode: 'flannel-host-gw',
    networkName: 'pods',
    netConf: named,
  });
  const odd = hostGw('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw","Name":"my net"}}');
  assert.equal(odd.ok, false);
  assert.match(!odd.ok ? odd.message : '', /names the host-gw network "my net" \(Backend\.Name\)/);
  assert.equal(hostGwNetworkName('{"Backend":{"Type":"host-gw","Name":""}}'), 'cbr0');
  assert.equal(hostGwNetworkName('not json'), 'cbr0');
  assert.equal(
    encapsulationPort({ mode: 'flannel-host-gw', networkName: 'cbr0', netConf: plain }),
    undefined,
  );
});

test('ovn-hybrid joins with the hybrid overlay, carrying the cluster’s VXLAN port only when it sets one', () => {
  const plain = nodeNetworkFor({
    mode: 'ovn-hybrid',
    detected: 'x',
    ovnHybrid: { hybridOverlayVni: 4097 },
  });
  assert.deepEqual(plain, {
    ok: true,
    network: { mode: 'ovn-hybrid' },
    detected: 'x',
    warnings: [],
  });
  const port = nodeNetworkFor({
    mode: 'ovn-hybrid',
    detected: 'x',
    ovnHybrid: { hybridOverlayVni: 4097, vxlanPort: 9789 },
  });
  assert.deepEqual(port.ok && port.network, { mode: 'ovn-hybrid', vxlanPort: 9789 });
});

test('a refused resolution is refused as it is; warnings travel with an accepted one', () => {
  assert.deepEqual(
    nodeNetworkState({
      ok: false,
      reason: 'NetworkModeMismatch',
      message: 'm',
      seen: 's',
      fix: 'f',
    }),
    { ok: false, reason: 'NetworkModeMismatch', message: 'm' },
  );
  const state = nodeNetworkState({
    ok: true,
    network: { mode: 'routed', detected: 'none' },
    warnings: ['w'],
  });
  assert.deepEqual(state.ok && state.warnings, ['w']);
});

test('external on a VXLAN data plane: UDP 4789 opened on the node; winfleet’s kube-proxy, which could not get a source VIP from the CNI’s IPAM, refused', () => {
  const calico = {
    cni: 'Calico',
    cniConfDir: 'C:\\etc\\cni\\net.d',
    cniBinDir: 'C:\\opt\\cni\\bin',
    networkName: 'Calico',
    overlay: true,
  };
  const withOwnProxy = nodeNetworkFor({
    mode: 'external',
    detected: 'Calico',
    external: { ...calico, kubeProxy: false },
  });
  assert.ok(withOwnProxy.ok);
  assert.equal(
    withOwnProxy.ok && withOwnProxy.network.mode === 'external' && withOwnProxy.network.overlay,
    true,
  );
  assert.equal(withOwnProxy.ok && encapsulationPort(withOwnProxy.network), 4789);
  const withWinfleetProxy = nodeNetworkFor({
    mode: 'external',
    detected: 'Calico',
    external: { ...calico, kubeProxy: true },
  });
  assert.equal(withWinfleetProxy.ok, false);
  assert.match(
    !withWinfleetProxy.ok ? withWinfleetProxy.message : '',
    /--source-vip from Calico's IPAM.*kube-proxy-windows/,
  );
  // Not an overlay (BGP, Antrea's Transparent network): no port, and no overlay field.
  const bgp = nodeNetworkFor({
    mode: 'external',
    detected: 'Calico',
    external: { ...calico, overlay: false, kubeProxy: true },
  });
  assert.ok(bgp.ok && !('overlay' in bgp.network));
  assert.equal(bgp.ok && encapsulationPort(bgp.network), undefined);
});
