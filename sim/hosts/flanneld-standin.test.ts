import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  flannelAnnotations,
  hostGwBackendData,
  parseFlannelNetConf,
  remoteHostGwLease,
  remoteLease,
} from './flanneld-standin.ts';

test('net-conf.json as the Windows VXLAN backend takes it: defaults 4096 and 4789', () => {
  assert.deepEqual(parseFlannelNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}'), {
    network: '10.244.0.0/16',
    backendType: 'vxlan',
    vni: 4096,
    port: 4789,
  });
  assert.equal(
    parseFlannelNetConf(
      '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4097,"Port":4789}}',
    ).vni,
    4097,
  );
});

test('flannel’s own refusals on Windows, with its messages: Linux defaults, other backends, no Network', () => {
  const refuses = (text: string, message: RegExp) =>
    assert.throws(() => parseFlannelNetConf(text), message);
  refuses(
    '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":1,"Port":4789}}',
    /^Error: Error registering network: invalid VXLAN backend config\. VNI \[1\] must be greater than or equal to 4096 on Windows$/,
  );
  refuses(
    '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":8472}}',
    /Port \[8472\] is not supported on Windows\. Omit the setting to default to port 4789/,
  );
  refuses('{"Network":"10.244.0.0/16"}', /unknown backend type: udp/);
  refuses(
    '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","DirectRouting":true}}',
    /DirectRouting is not supported on Windows/,
  );
  refuses('{"Backend":{"Type":"vxlan"}}', /please define a correct Network parameter/);
  refuses('not json', /failed to read net conf/);
});

const node = (annotations: Record<string, string>, podCIDR = '10.244.1.0/24'): k8s.V1Node => ({
  metadata: { name: 'lnx-1', annotations },
  spec: { podCIDR },
});

test('a remote Node’s lease, as nodeToLease reads it; none without kube-subnet-manager=true', () => {
  const annotations = {
    [flannelAnnotations.kubeSubnetManager]: 'true',
    [flannelAnnotations.backendType]: 'vxlan',
    [flannelAnnotations.backendData]: '{"VNI":4096,"VtepMAC":"7e:1a:2b:3c:4d:5e"}',
    [flannelAnnotations.publicIp]: '192.0.2.11',
  };
  assert.deepEqual(remoteLease(node(annotations)), {
    subnet: '10.244.1.0/24',
    publicIp: '192.0.2.11',
    vni: 4096,
    vtepMac: '7e:1a:2b:3c:4d:5e',
  });
  assert.equal(
    remoteLease(node({ ...annotations, [flannelAnnotations.kubeSubnetManager]: 'false' })),
    undefined,
  );
  assert.equal(
    remoteLease(node({ ...annotations, [flannelAnnotations.backendType]: 'host-gw' })),
    undefined,
  );
  assert.equal(
    remoteLease(
      node({
        ...annotations,
        [flannelAnnotations.backendData]: '{"VNI":1,"VtepMAC":"7e:1a:2b:3c:4d:5e"}',
      }),
    ),
    undefined,
    'a VNI under 4096 is refused on Windows',
  );
  assert.equal(
    remoteLease(node({ ...annotations, [flannelAnnotations.publicIp]: 'not-an-ip' })),
    undefined,
  );
  assert.equal(
    remoteLease(node({ ...annotations, [flannelAnnotations.backendData]: '{' })),
    undefined,
  );
});

test('net-conf.json with the host-gw backend: the L2Bridge network cbr0 unless Backend.Name says', () => {
  assert.deepEqual(
    parseFlannelNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}'),
    {
      network: '10.244.0.0/16',
      backendType: 'host-gw',
      vni: 0,
      port: 0,
      name: 'cbr0',
    },
  );
  assert.equal(
    parseFlannelNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw","Name":"pods"}}')
      .name,
    'pods',
  );
  assert.throws(
    () => parseFlannelNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw","Name":7}}'),
    /error decoding windows host-gw backend config/,
  );
});

test('a remote host-gw lease: its podCIDR via its public IP; none of another backend or without the manager', () => {
  const annotations = {
    [flannelAnnotations.kubeSubnetManager]: 'true',
    [flannelAnnotations.backendType]: 'host-gw',
    [flannelAnnotations.backendData]: hostGwBackendData,
    [flannelAnnotations.publicIp]: '192.0.2.11',
  };
  assert.equal(hostGwBackendData, 'null');
  assert.deepEqual(remoteHostGwLease(node(annotations)), {
    subnet: '10.244.1.0/24',
    publicIp: '192.0.2.11',
  });
  assert.equal(
    remoteHostGwLease(node({ ...annotations, [flannelAnnotations.backendType]: 'vxlan' })),
    undefined,
  );
  assert.equal(
    remoteHostGwLease(node({ ...annotations, [flannelAnnotations.kubeSubnetManager]: 'false' })),
    undefined,
  );
  assert.equal(
    remoteHostGwLease(node({ ...annotations, [flannelAnnotations.publicIp]: 'x' })),
    undefined,
  );
  assert.equal(remoteHostGwLease(node(annotations, '')), undefined);
});
