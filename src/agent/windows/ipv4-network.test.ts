import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { nodeAddress } from '../../hostaccess/node-address.ts';
import { windowsFixture } from './fixtures.ts';
import { ipv4NetworkScript, parseIpv4NetworkOutput } from './ipv4-network.ts';

test('the script is valid PowerShell with the host-facts statements', async () => {
  const script = ipv4NetworkScript();
  assert.match(script, /Get-NetIPAddress -AddressFamily IPv4/);
  assert.match(script, /-PolicyStore ActiveStore/);
  await assertValidPowerShell(script);
});

test("the node address is the default route's, not the HNS or APIPA row listed first", () => {
  const network = parseIpv4NetworkOutput(windowsFixture('ipv4-network-2022.json'));
  assert.equal(network.ipAddresses[0]!.interfaceAlias, 'vEthernet (nat)');
  assert.equal(nodeAddress('', network), '10.0.1.23');
  const one = parseIpv4NetworkOutput(windowsFixture('ipv4-network-one-address.json'));
  assert.equal(nodeAddress('', one), '10.0.1.23');
});

test('output out of shape is refused naming the row', () => {
  assert.throws(
    () => parseIpv4NetworkOutput('{"ipAddresses":[{"address":1}],"defaultRoutes":null}'),
    /Cannot read the host's IPv4 network ipAddresses\[0\]: "address" is 1, expected a string/,
  );
  assert.throws(() => parseIpv4NetworkOutput('[]'), /expected a JSON object/);
});
