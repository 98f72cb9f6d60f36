/** The lab's network mode from WINFLEET_LAB_NETWORK, and when it shows real packets. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { labNetworkMode, packetsDecision } from './lab-network.ts';

test('the lab runs flannel-vxlan unless WINFLEET_LAB_NETWORK says routed; anything else is refused', () => {
  assert.equal(labNetworkMode(undefined), 'flannel-vxlan');
  assert.equal(labNetworkMode(''), 'flannel-vxlan');
  assert.equal(labNetworkMode('flannel-vxlan'), 'flannel-vxlan');
  assert.equal(labNetworkMode('routed'), 'routed');
  assert.throws(
    () => labNetworkMode('calico'),
    /WINFLEET_LAB_NETWORK=calico: the lab runs flannel-vxlan or routed/,
  );
});

test('packets are shown only for flannel-vxlan, as root, with every netlab binary; otherwise the lab says why', () => {
  const base = { mode: 'flannel-vxlan' as const, uid: 0, netlabBin: '/cache/netlab', missing: [] };
  assert.deepEqual(packetsDecision(base), { show: true, binDir: '/cache/netlab' });
  assert.deepEqual(packetsDecision({ ...base, mode: 'routed' }), {
    show: false,
    why: 'WINFLEET_LAB_NETWORK=routed',
  });
  const user = packetsDecision({ ...base, uid: 1000 });
  assert.equal(user.show, false);
  assert.match(!user.show ? user.why : '', /uid 1000, and network namespaces, .* need root/);
  const unset = packetsDecision({ ...base, netlabBin: undefined });
  assert.match(
    !unset.show ? unset.why : '',
    /WINFLEET_NETLAB_BIN is not set \(hack\/build-netlab\.sh/,
  );
  const missing = packetsDecision({ ...base, missing: ['flanneld'] });
  assert.match(
    !missing.show ? missing.why : '',
    /WINFLEET_NETLAB_BIN=\/cache\/netlab lacks flanneld/,
  );
});
