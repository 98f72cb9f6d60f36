import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import {
  type CniAddressRequest,
  parseCniAddressOutput,
  reserveCniAddressScript,
} from './cni-address.ts';

const request: CniAddressRequest = {
  binDir: 'C:\\k\\cni\\bin',
  network: 'flannel.4096',
  subnet: '10.244.3.0/24',
  containerId: 'winfleet-source-vip',
};

test('the script sets the CNI environment and pipes the 0.2.0 request to host-local.exe', async () => {
  const script = reserveCniAddressScript(request);
  await assertValidPowerShell(script, 'reserve a CNI address');
  assert.match(script, /\$env:CNI_COMMAND = 'ADD'/);
  assert.match(script, /\$env:CNI_CONTAINERID = 'winfleet-source-vip'/);
  assert.match(script, /\$env:CNI_PATH = 'C:\\k\\cni\\bin'/);
  const body = /\$out = '(\{.*\})' \|/.exec(script)?.[1];
  assert.deepEqual(JSON.parse(body!), {
    cniVersion: '0.2.0',
    name: 'flannel.4096',
    ipam: {
      type: 'host-local',
      ranges: [[{ subnet: '10.244.3.0/24' }]],
      dataDir: '/var/lib/cni/networks',
    },
  });
});

test('fields that are not exactly what winfleet asks for are refused before any script', () => {
  for (const bad of [
    { binDir: 'k\\cni' },
    { binDir: "C:\\k'; rm -r C:\\" },
    { network: 'flannel 4096' },
    { containerId: '../x' },
    { subnet: '10.244.3.1/24' },
    { subnet: '10.244.3.0/31' },
  ])
    assert.throws(
      () => reserveCniAddressScript({ ...request, ...bad }),
      { code: 'WF_INVARIANT' },
      JSON.stringify(bad),
    );
});

test('host-local’s answer: its ip4.ip, or the address a duplicate allocation names for this id', () => {
  assert.equal(
    parseCniAddressOutput(
      '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.3.2/24","gateway":"10.244.3.1"},"dns":{}}',
      request,
    ),
    '10.244.3.2',
  );
  assert.equal(
    parseCniAddressOutput(
      '{"code":999,"msg":"10.244.3.2 has been allocated to winfleet-source-vip, duplicate allocation is not allowed"}',
      request,
    ),
    '10.244.3.2',
  );
  // Another id's address, one outside the subnet, an error, or not JSON: refused, quoted.
  assert.throws(
    () =>
      parseCniAddressOutput(
        '{"code":999,"msg":"10.244.3.2 has been allocated to someone-else, duplicate allocation is not allowed"}',
        request,
      ),
    /host-local reserved no address in 10\.244\.3\.0\/24 for winfleet-source-vip: 10\.244\.3\.2 has been allocated to someone-else/,
  );
  assert.throws(
    () => parseCniAddressOutput('{"ip4":{"ip":"10.9.9.9/24"}}', request),
    /reserved no address/,
  );
  assert.throws(
    () =>
      parseCniAddressOutput(
        '{"code":11,"msg":"no IP addresses available in range set: 10.244.3.1-10.244.3.254"}',
        request,
      ),
    /no IP addresses available/,
  );
  assert.throws(() => parseCniAddressOutput('failed', request), /not JSON/);
});

test('one exact address (flannel-host-gw’s bridge endpoint): a range of one, and only that address is read back', async () => {
  const exact: CniAddressRequest = {
    ...request,
    network: 'cbr0',
    containerId: 'winfleet-bridge-endpoint',
    address: '10.244.3.2',
  };
  const script = reserveCniAddressScript(exact);
  await assertValidPowerShell(script, 'reserve one CNI address');
  const body = /\$out = '(\{.*\})' \|/.exec(script)?.[1];
  assert.deepEqual(JSON.parse(body!).ipam.ranges, [
    [{ subnet: '10.244.3.0/24', rangeStart: '10.244.3.2', rangeEnd: '10.244.3.2' }],
  ]);
  assert.equal(
    parseCniAddressOutput('{"cniVersion":"0.2.0","ip4":{"ip":"10.244.3.2/24"}}', exact),
    '10.244.3.2',
  );
  assert.throws(
    () => parseCniAddressOutput('{"cniVersion":"0.2.0","ip4":{"ip":"10.244.3.3/24"}}', exact),
    /host-local reserved no address/,
  );
  for (const address of ['10.244.3.1', '10.244.3.0', '10.244.3.255', '10.244.4.2', '10.244.3.02'])
    assert.throws(
      () => reserveCniAddressScript({ ...exact, address }),
      { code: 'WF_INVARIANT' },
      address,
    );
});
