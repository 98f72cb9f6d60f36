import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { createAgentTestHost, prepareAsOperator } from '../../sim/hosts/agent-test-host.ts';
import { reserveHostLocalAddress } from '../../sim/hosts/sim-cni.ts';
import { standInBinary } from '../../sim/hosts/stand-in-binary.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import { paths } from './agent-config.ts';
import {
  bridgeEndpointAddress,
  bridgeEndpointHolder,
  syncBridgeEndpointAddress,
} from './bridge-endpoint.ts';
import { runAgent } from './run-agent.ts';

const hostGw: NodeNetwork = { mode: 'flannel-host-gw', networkName: 'cbr0', netConf: '{}' };
const node = (podCIDR?: string): k8s.V1Node => ({
  metadata: { name: 'win-agent-test' },
  spec: podCIDR ? { podCIDR } : {},
});

test('the bridge endpoint’s address is the lease’s .2', () => {
  assert.equal(bridgeEndpointAddress('10.244.3.0/24'), '10.244.3.2');
  assert.equal(bridgeEndpointAddress('10.244.3.0/31'), undefined);
  assert.equal(bridgeEndpointAddress('10.244.3.1/24'), undefined);
});

test('flannel-host-gw: .2 reserved in cbr0’s host-local store once the Node has its lease, so no pod gets it', async (t) => {
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  await host.machine.fs.mkdir(paths.cniBin, { recursive: true });
  await host.machine.fs.writeFileAtomic(
    `${paths.cniBin}\\host-local.exe`,
    standInBinary('host-local', 'v1.9.1'),
  );
  // Other modes and a Node without a pod CIDR reserve nothing.
  assert.equal(
    await syncBridgeEndpointAddress(host.context, node('10.244.3.0/24'), { mode: 'routed' }),
    false,
  );
  assert.equal(await syncBridgeEndpointAddress(host.context, node(), hostGw), false);
  assert.equal(await syncBridgeEndpointAddress(host.context, node('10.244.3.0/24'), hostGw), true);
  assert.match(host.stderr.join(''), /cbr0_ep's address 10\.244\.3\.2 is reserved/);
  // The holder keeps it; the next address host-local hands out is .3.
  assert.equal(
    await reserveHostLocalAddress(host.machine.fs, {
      network: 'cbr0',
      subnet: '10.244.3.0/24',
      containerId: bridgeEndpointHolder,
      address: '10.244.3.2',
    }),
    '10.244.3.2',
  );
  assert.equal(
    await reserveHostLocalAddress(host.machine.fs, {
      network: 'cbr0',
      subnet: '10.244.3.0/24',
      containerId: 'pod-a',
    }),
    '10.244.3.3',
  );
});

test('.2 already a pod’s: said in the log, nothing thrown', async (t) => {
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  await host.machine.fs.mkdir(paths.cniBin, { recursive: true });
  await host.machine.fs.writeFileAtomic(
    `${paths.cniBin}\\host-local.exe`,
    standInBinary('host-local', 'v1.9.1'),
  );
  assert.equal(
    await reserveHostLocalAddress(host.machine.fs, {
      network: 'cbr0',
      subnet: '10.244.3.0/24',
      containerId: 'pod-a',
    }),
    '10.244.3.2',
  );
  assert.equal(await syncBridgeEndpointAddress(host.context, node('10.244.3.0/24'), hostGw), false);
  assert.match(
    host.stderr.join(''),
    /Cannot reserve the bridge endpoint's address 10\.244\.3\.2 on cbr0/,
  );
});
