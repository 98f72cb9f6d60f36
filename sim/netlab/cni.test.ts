/** A CNI 1.0.0 ADD result (the bridge plugin's shape) read strictly, and what is refused. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCniResult } from './cni.ts';

test('the bridge plugin’s result: interfaces, the address with its gateway, routes', () => {
  const result = parseCniResult(
    JSON.stringify({
      cniVersion: '1.0.0',
      interfaces: [
        { name: 'cni0', mac: '6a:1b:2c:3d:4e:5f' },
        { name: 'veth0a1b2c3d', mac: '7a:1b:2c:3d:4e:5f' },
        { name: 'eth0', mac: '8a:1b:2c:3d:4e:5f', sandbox: '/run/netns/wfnl-1-0-p1' },
      ],
      ips: [{ interface: 2, address: '10.244.1.2/24', gateway: '10.244.1.1' }],
      routes: [{ dst: '10.244.0.0/16' }, { dst: '0.0.0.0/0', gw: '10.244.1.1' }],
      dns: {},
    }),
    'ADD',
  );
  assert.deepEqual(result.ips, [{ address: '10.244.1.2/24', gateway: '10.244.1.1', interface: 2 }]);
  assert.equal(result.interfaces[2]?.sandbox, '/run/netns/wfnl-1-0-p1');
  assert.deepEqual(result.routes[1], { dst: '0.0.0.0/0', gw: '10.244.1.1' });
  // loopback's result has no IPs at all.
  assert.deepEqual(
    parseCniResult(
      '{"cniVersion":"1.0.0","interfaces":[{"name":"lo","mac":"00:00:00:00:00:00","sandbox":"/run/netns/x"}],"ips":[{"interface":0,"address":"127.0.0.1/8"}],"dns":{}}',
      'lo',
    ).routes,
    [],
  );
  assert.throws(() => parseCniResult('not json', 'ADD'), /ADD: the result is not JSON/);
  assert.throws(() => parseCniResult('{"ips":{}}', 'ADD'), /must be arrays/);
  assert.throws(
    () => parseCniResult('{"ips":[{"gateway":"10.244.1.1"}]}', 'ADD'),
    /an IP without an address/,
  );
  assert.throws(() => parseCniResult('{"interfaces":[{}]}', 'ADD'), /an interface without a name/);
});
