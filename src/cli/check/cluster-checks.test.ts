import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flannelNetwork, flannelVerdict, probePod } from './cluster-checks.ts';

test('Flannel VXLAN passes only with VNI 4096 and port 4789', () => {
  const conf = (backend: unknown) => JSON.stringify({ Network: '10.244.0.0/16', Backend: backend });
  assert.equal(flannelVerdict(conf({ Type: 'vxlan', VNI: 4096, Port: 4789 })).status, 'pass');
  const defaults = flannelVerdict(conf({ Type: 'vxlan' }));
  assert.equal(defaults.status, 'fail');
  assert.match(defaults.message, /VNI 1 and UDP port 8472 \(defaults where unset\)/);
  assert.match(defaults.fix, /"VNI": 4096, "Port": 4789/);
  assert.equal(flannelVerdict(conf({ Type: 'vxlan', VNI: 4096 })).status, 'fail');
  assert.equal(flannelVerdict(conf({ Type: 'vxlan', VNI: 4097, Port: 4789 })).status, 'warn');
  assert.equal(flannelVerdict(conf({ Type: 'vxlan', VNI: 4096, Port: 8472 })).status, 'fail');
  assert.equal(flannelVerdict(conf({ Type: 'host-gw' })).status, 'pass');
  assert.equal(flannelVerdict(conf({ Type: 'wireguard' })).status, 'fail');
  assert.equal(flannelVerdict('{not json').status, 'fail');
});

test('the webhook probe is a HostProcess Windows pod (no image lookups)', () => {
  const pod = probePod('default');
  assert.equal(pod.spec?.os?.name, 'windows');
  assert.equal(pod.spec?.securityContext?.windowsOptions?.hostProcess, true);
  assert.equal(pod.metadata?.namespace, 'default');
});

test("Flannel's backend tells the host checks whether the pod network is an overlay", () => {
  const conf = (backend: unknown) => JSON.stringify({ Network: '10.244.0.0/16', Backend: backend });
  const where = 'ConfigMap kube-flannel/kube-flannel-cfg';
  assert.deepEqual(flannelNetwork(conf({ Type: 'VXLAN', VNI: 4096, Port: 4789 }), where), {
    overlay: true,
    seen: `Flannel VXLAN (${where})`,
  });
  // The defaults are wrong for Windows (the cni check fails them) but still an overlay.
  assert.equal(flannelNetwork(conf({ Type: 'vxlan' }), where).overlay, true);
  assert.equal(flannelNetwork(conf({ Type: 'host-gw' }), where).overlay, false);
  assert.equal(flannelNetwork(conf({ Type: 'wireguard' }), where).overlay, undefined);
  assert.equal(flannelNetwork('{not json', where).overlay, undefined);
});
