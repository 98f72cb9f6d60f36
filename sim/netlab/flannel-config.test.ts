/**
 * Flannel's contract as data: lease annotations as AcquireLease writes them, net-conf.json,
 * subnet.env as flanneld writes it (read strictly), and the bridge delegate flannel's CNI
 * plugin renders from it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  flannelAnnotations,
  flannelDelegateConf,
  leaseAnnotations,
  leasePatch,
  parseSubnetEnv,
  readLeaseAnnotations,
  renderNetConf,
} from './flannel-config.ts';

test('a VXLAN lease: the four annotations, backend data as Go marshals vxlanLeaseAttrs', () => {
  const a = leaseAnnotations({
    backend: { type: 'vxlan', vni: 4096, vtepMac: '0e:2a:00:00:00:21' },
    publicIp: '192.0.2.21',
  });
  assert.deepEqual(a, {
    'flannel.alpha.coreos.com/backend-type': 'vxlan',
    'flannel.alpha.coreos.com/backend-data': '{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:21"}',
    'flannel.alpha.coreos.com/public-ip': '192.0.2.21',
    'flannel.alpha.coreos.com/kube-subnet-manager': 'true',
  });
  assert.deepEqual(leasePatch(a), { metadata: { annotations: a } });
  assert.deepEqual(readLeaseAnnotations(a, 'win1'), {
    backendType: 'vxlan',
    publicIp: '192.0.2.21',
    vni: 4096,
    vtepMac: '0e:2a:00:00:00:21',
  });
});

test('host-gw has null backend data; a lease can leave out kube-subnet-manager', () => {
  const a = leaseAnnotations({
    backend: { type: 'host-gw' },
    publicIp: '192.0.2.22',
    withoutKubeSubnetManager: true,
  });
  assert.equal(a[flannelAnnotations.backendData], 'null');
  assert.equal(a[flannelAnnotations.kubeSubnetManager], undefined);
  assert.throws(
    () => readLeaseAnnotations(a, 'n'),
    /Node n has no annotation flannel.alpha.coreos.com\/kube-subnet-manager/,
  );
  assert.throws(
    () =>
      leaseAnnotations({
        backend: { type: 'vxlan', vni: 4096, vtepMac: '0E:2A:00:00:00:21' },
        publicIp: '192.0.2.21',
      }),
    /not a lowercase MAC/,
  );
  assert.throws(
    () =>
      readLeaseAnnotations(
        {
          ...leaseAnnotations({
            backend: { type: 'vxlan', vni: 1, vtepMac: '0e:2a:00:00:00:21' },
            publicIp: 'x',
          }),
          [flannelAnnotations.backendData]: '{"VNI":1}',
        },
        'n',
      ),
    /is not \{"VNI":n,"VtepMAC":"mac"\}/,
  );
});

test('net-conf.json with a VXLAN or host-gw backend', () => {
  assert.deepEqual(
    JSON.parse(
      renderNetConf({
        network: '10.244.0.0/16',
        backend: { type: 'vxlan', vni: 4096, port: 4789 },
      }),
    ),
    {
      Network: '10.244.0.0/16',
      EnableNFTables: false,
      Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 },
    },
  );
  assert.deepEqual(
    JSON.parse(renderNetConf({ network: '10.244.0.0/16', backend: { type: 'host-gw' } })).Backend,
    { Type: 'host-gw' },
  );
  assert.throws(
    () => renderNetConf({ network: '10.244.0.0', backend: { type: 'host-gw' } }),
    /not an IPv4 CIDR/,
  );
});

const written =
  'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n';

test('subnet.env as flanneld writes it, and what is refused', () => {
  assert.deepEqual(parseSubnetEnv(written), {
    network: '10.244.0.0/16',
    subnet: '10.244.3.1/24',
    mtu: 1450,
    ipMasq: false,
  });
  assert.throws(
    () => parseSubnetEnv('FLANNEL_NETWORK=10.244.0.0/16\n'),
    /missing FLANNEL_SUBNET, FLANNEL_MTU, FLANNEL_IPMASQ/,
  );
  assert.throws(() => parseSubnetEnv(`${written}FLANNEL_MTU=1400\n`), /FLANNEL_MTU given twice/);
  assert.throws(
    () => parseSubnetEnv(written.replace('1450', '14x')),
    /FLANNEL_MTU 14x is not a number/,
  );
  assert.throws(() => parseSubnetEnv(written.replace('=false', '=no')), /FLANNEL_IPMASQ no/);
  assert.throws(() => parseSubnetEnv(`${written}OTHER=1\n`), /unexpected line "OTHER=1"/);
});

test('the bridge delegate flannel’s CNI plugin renders from subnet.env', () => {
  const env = parseSubnetEnv(written);
  const conf = {
    cniVersion: '1.0.0',
    name: 'cbr0',
    delegate: { hairpinMode: true, isDefaultGateway: true },
    ipam: { dataDir: '/tmp/x/ipam' },
  };
  assert.deepEqual(flannelDelegateConf(conf, env), {
    hairpinMode: true,
    isDefaultGateway: true,
    name: 'cbr0',
    type: 'bridge',
    ipMasq: true,
    mtu: 1450,
    isGateway: true,
    cniVersion: '1.0.0',
    ipam: {
      dataDir: '/tmp/x/ipam',
      type: 'host-local',
      ranges: [[{ subnet: '10.244.3.0/24' }]],
      routes: [{ dst: '10.244.0.0/16' }],
    },
  });
  // What the delegate sets wins; name and ipam are flannel's.
  assert.equal(flannelDelegateConf({ ...conf, delegate: { ipMasq: false } }, env).ipMasq, false);
  assert.throws(
    () => flannelDelegateConf({ ...conf, delegate: { name: 'x' } }, env),
    /must not have 'name'/,
  );
  assert.throws(
    () => flannelDelegateConf({ ...conf, delegate: { type: 1 } }, env),
    /must have \(string\) 'type'/,
  );
});
