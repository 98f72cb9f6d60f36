import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import {
  bridgeEndpointName,
  encapsulationPort,
  kubeProxyNetwork,
  type NodeNetwork,
  needsSourceVip,
  nodeNetworkSchema,
  podNetworkName,
  runsFlanneld,
  winfleetOwnsNetwork,
} from './node-network.ts';

const netConf = '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}';
const hostGw: NodeNetwork = { mode: 'flannel-host-gw', networkName: 'cbr0', netConf };
const vxlan: NodeNetwork = { mode: 'flannel-vxlan', vni: 4096, netConf };

test('flannel-host-gw: pods and kube-proxy on cbr0, flanneld runs, no source VIP, no encapsulation', () => {
  assert.equal(podNetworkName(hostGw), 'cbr0');
  assert.equal(kubeProxyNetwork(hostGw), 'cbr0');
  assert.equal(needsSourceVip(hostGw), false);
  assert.equal(encapsulationPort(hostGw), undefined);
  assert.equal(winfleetOwnsNetwork(hostGw), true);
  assert.equal(runsFlanneld(hostGw), true);
  assert.equal(bridgeEndpointName(hostGw), 'cbr0_ep');
  assert.equal(bridgeEndpointName({ ...hostGw, networkName: 'pods' }), 'pods_ep');
  // The other modes keep what they had.
  assert.equal(runsFlanneld(vxlan), true);
  assert.equal(needsSourceVip(vxlan), true);
  assert.equal(encapsulationPort(vxlan), 4789);
  assert.equal(bridgeEndpointName(vxlan), undefined);
  assert.equal(runsFlanneld({ mode: 'routed' }), false);
});

test('the schema takes flannel-host-gw with its network name and net-conf, strictly', () => {
  const validate = new Ajv({ strict: true }).compile(nodeNetworkSchema);
  assert.equal(validate(hostGw), true);
  assert.equal(validate({ mode: 'flannel-host-gw', netConf }), false);
  assert.equal(validate({ mode: 'flannel-host-gw', networkName: '', netConf }), false);
  assert.equal(validate({ ...hostGw, vni: 4096 }), false);
  assert.equal(validate({ ...hostGw, extra: true }), false);
  assert.equal(validate(vxlan), true);
});
