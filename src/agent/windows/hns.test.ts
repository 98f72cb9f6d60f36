import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { powerShellCommandLine, powerShellPrelude } from '../../powershell/powershell.ts';
import { windowsFixture } from './fixtures.ts';
import {
  checkHnsNetworkSpec,
  createHnsNetworkScript,
  defaultHnsModulePaths,
  hnsModuleFile,
  hnsUnavailableError,
  listHnsEndpointsScript,
  listHnsNetworksScript,
  maxHnsEndpoints,
  parseGetHnsNetworkOutput,
  parseHnsCreateOutput,
  parseHnsEndpointListOutput,
  parseHnsEndpointRemoveOutput,
  parseHnsEndpoints,
  parseHnsListOutput,
  parseHnsNetworks,
  parseHnsRemoveOutput,
  removeHnsEndpointScript,
  removeHnsNetworkScript,
} from './hns.ts';

const nat = { id: '5F0BA94E-3F4B-4C0E-8C79-4E5B3C1D8B21', name: 'nat', type: 'nat' };

test('reads Get-HnsNetwork | Select Id,Name,Type | ConvertTo-Json: one object, an array, or nothing', () => {
  assert.deepEqual(parseGetHnsNetworkOutput(windowsFixture('get-hnsnetwork-nat.json')), [nat]);
  assert.deepEqual(parseGetHnsNetworkOutput(windowsFixture('get-hnsnetwork-flannel-vxlan.json')), [
    nat,
    { id: 'A6E2D0F4-2C7B-4D56-9E0A-3B8F6C1D2E47', name: 'External', type: 'Overlay' },
    { id: 'C3B1A9E8-7D64-4F25-8A1B-0E9D2C3F4A56', name: 'vxlan0', type: 'Overlay' },
  ]);
  assert.deepEqual(parseGetHnsNetworkOutput(windowsFixture('get-hnsnetwork-none.json')), []);
  assert.deepEqual(parseHnsNetworks(null), []);
  assert.deepEqual(
    parseHnsNetworks({ value: [{ Id: nat.id, Name: 'nat', Type: 'nat' }], Count: 1 }),
    [nat],
  );
  assert.deepEqual(parseHnsNetworks({ id: 'x', NAME: 'n', Type: 2 }), [
    { id: 'x', name: 'n', type: '2' },
  ]);
  assert.throws(
    () => parseHnsNetworks([{ Name: 'nat' }]),
    /Cannot read HNS network 0 \{"Name":"nat"\}: it has no Id/,
  );
  assert.throws(() => parseHnsNetworks(['nat']), /expected an object, got "nat"/);
});

test('reads what the list script prints, available or not', () => {
  assert.deepEqual(parseHnsListOutput(windowsFixture('hns-list-available.json')), {
    available: true,
    networks: [nat, { id: 'D2C4E6F8-1A3B-4C5D-8E7F-9A0B1C2D3E4F', name: 'cbr0', type: 'L2Bridge' }],
  });
  assert.deepEqual(parseHnsListOutput(windowsFixture('hns-list-empty.json')), {
    available: true,
    networks: [],
  });
  assert.deepEqual(parseHnsListOutput(windowsFixture('hns-list-unavailable.json')), {
    available: false,
    tried: ['HostNetworkingService', 'C:\\k\\hns.v2.psm1'],
  });
  assert.throws(() => parseHnsListOutput('[]'), /expected \{"available": true\|false, \.\.\.\}/);
});

test('reads what the remove script prints', () => {
  assert.deepEqual(parseHnsRemoveOutput(windowsFixture('hns-remove-one.json')), {
    available: true,
    removed: 1,
  });
  assert.deepEqual(parseHnsRemoveOutput(windowsFixture('hns-list-unavailable.json')), {
    available: false,
    tried: ['HostNetworkingService', 'C:\\k\\hns.v2.psm1'],
  });
  assert.throws(() => parseHnsRemoveOutput('{"available":true}'), /"removed" is not a count/);
});

test('the list script loads a module, casts properties and always prints an array', async () => {
  const script = listHnsNetworksScript();
  assert.ok(script.startsWith(powerShellPrelude));
  assert.match(script, /Import-Module -Name 'HostNetworkingService' -DisableNameChecking/);
  assert.match(script, /foreach \(\$path in @\('C:\\k\\hns\.v2\.psm1'\)\)/);
  assert.match(
    script,
    /Id = \[string\]\$_\.Id; Name = \[string\]\$_\.Name; Type = \[string\]\$_\.Type/,
  );
  assert.match(script, /networks = @\(\$networks\)/);
  await assertValidPowerShell(script, 'HNS list');
  await assertValidPowerShell(
    listHnsNetworksScript(["C:\\it's\\hns.psm1", 'D:\\hns.psm1']),
    'HNS list',
  );
  assert.doesNotThrow(() => powerShellCommandLine(script), 'short enough to send over SSH too');
});

test('the remove script matches the id case-insensitively and accepts only GUIDs', async () => {
  const script = removeHnsNetworkScript('c3b1a9e8-7d64-4f25-8a1b-0e9d2c3f4a56');
  assert.match(
    script,
    /\[string\]\$_\.Id -eq 'c3b1a9e8-7d64-4f25-8a1b-0e9d2c3f4a56'\) \}\)\nif \(\$targets\.Count -gt 0\) \{ \$targets \| Remove-HnsNetwork \}/,
  );
  await assertValidPowerShell(script, 'HNS remove');
  assert.throws(
    () => removeHnsNetworkScript("x'; Remove-Item C:\\ -Recurse; '"),
    /Cannot remove HNS network "x'; Remove-Item C:\\ -Recurse; '": an HNS network id is a GUID/,
  );
});

test('an unavailable HNS module says what was tried and how to fix it', () => {
  const error = hnsUnavailableError('list HNS networks', [
    'HostNetworkingService',
    'C:\\k\\hns.v2.psm1',
  ]);
  assert.equal(error.code, 'WF_HNS_UNAVAILABLE');
  assert.deepEqual(error.details, { tried: ['HostNetworkingService', 'C:\\k\\hns.v2.psm1'] });
  assert.equal(
    error.message,
    'Cannot list HNS networks: Get-HnsNetwork is not available (tried "HostNetworkingService", "C:\\k\\hns.v2.psm1"); install the Containers feature, or copy hns.v2.psm1 from microsoft/SDN (Kubernetes/windows/hns.v2.psm1) to C:\\k\\hns.v2.psm1',
  );
});

// microsoft/SDN's Kubernetes/windows/hns.psm1 has exported neither Get-HnsNetwork nor
// Remove-HnsNetwork since commit 710cad6 (2018); hns.v2.psm1 exports both (Export-ModuleMember
// -Function Get-HnsNetwork, Remove-HnsNetwork). The old name would load a module that lacks them.
test('the fallback module is hns.v2.psm1, the microsoft/SDN file that exports Get-HnsNetwork', () => {
  assert.equal(hnsModuleFile, 'hns.v2.psm1');
  assert.deepEqual(defaultHnsModulePaths, ['C:\\k\\hns.v2.psm1']);
  assert.match(listHnsNetworksScript(), /@\('C:\\k\\hns\.v2\.psm1'\)/);
  assert.doesNotMatch(listHnsNetworksScript(), /\\hns\.psm1/);
  assert.match(hnsUnavailableError('x', []).message, /copy hns\.v2\.psm1 from microsoft\/SDN/);
});

test('the create script is valid PowerShell; what it prints is read strictly', async () => {
  const script = createHnsNetworkScript({
    name: 'winfleet',
    type: 'L2Bridge',
    addressPrefix: '10.244.1.0/24',
    gateway: '10.244.1.1',
  });
  await assertValidPowerShell(script);
  assert.match(script, /\$network = @\(Get-HnsNetwork \| Where-Object .* -eq 'winfleet'\) \}\)/);
  const network = { Id: nat.id, Name: 'winfleet', Type: 'L2Bridge' };
  assert.deepEqual(
    parseHnsCreateOutput(JSON.stringify({ available: true, created: false, network })),
    {
      available: true,
      created: false,
      network: { id: nat.id, name: 'winfleet', type: 'L2Bridge' },
    },
  );
  assert.deepEqual(
    parseHnsCreateOutput(windowsFixture('hns-list-unavailable.json')).available,
    false,
  );
  assert.throws(
    () => parseHnsCreateOutput(JSON.stringify({ available: true, created: 'yes', network })),
    /"created" is not true or false/,
  );
  assert.throws(
    () => parseHnsCreateOutput(JSON.stringify({ available: true, created: true, network: [] })),
    /expected one network/,
  );
  assert.throws(
    () =>
      checkHnsNetworkSpec({
        name: 'a b',
        type: 'L2Bridge',
        addressPrefix: '10.0.0.0/24',
        gateway: '10.0.0.1',
      }),
    /a network name has 1 to 64 letters/,
  );
});

const podEndpoint = {
  id: '9C1B2D3E-4F50-4A6B-8C7D-0E1F2A3B4C5D',
  name: '3f1a9c0b7e2d_winfleet',
  networkId: 'D2C4E6F8-1A3B-4C5D-8E7F-9A0B1C2D3E4F',
  ipAddress: '10.244.1.5',
  remote: false,
};

test('reads what the endpoint list script prints: an array, one object, none, or unavailable', () => {
  assert.deepEqual(parseHnsEndpointListOutput(windowsFixture('hns-endpoints-available.json')), {
    available: true,
    endpoints: [
      podEndpoint,
      {
        id: '0A1B2C3D-4E5F-4061-8273-8495A6B7C8D9',
        name: '',
        networkId: 'D2C4E6F8-1A3B-4C5D-8E7F-9A0B1C2D3E4F',
        ipAddress: '10.244.2.7',
        remote: true,
      },
    ],
  });
  assert.deepEqual(parseHnsEndpointListOutput(windowsFixture('hns-endpoints-one.json')), {
    available: true,
    endpoints: [podEndpoint],
  });
  assert.deepEqual(parseHnsEndpointListOutput('{"available":true,"endpoints":[]}'), {
    available: true,
    endpoints: [],
  });
  assert.deepEqual(parseHnsEndpointListOutput(windowsFixture('hns-list-unavailable.json')), {
    available: false,
    tried: ['HostNetworkingService', 'C:\\k\\hns.v2.psm1'],
  });
  // An IPv6-only endpoint has no IPv4 address: '' (never called stale).
  assert.equal(
    parseHnsEndpoints([
      { Id: podEndpoint.id, Name: 'x', NetworkId: '', IpAddress: '', Remote: false },
    ])[0]!.ipAddress,
    '',
  );
});

test('hostile or garbage endpoint output is refused, naming the endpoint and what is wrong', () => {
  const good = {
    Id: podEndpoint.id,
    Name: podEndpoint.name,
    NetworkId: podEndpoint.networkId,
    IpAddress: '10.244.1.5',
    Remote: false,
  };
  const bad: [unknown, RegExp][] = [
    ['10.244.1.5', /HNS endpoint 0 "10\.244\.1\.5": expected an object/],
    [[good], /HNS endpoint 0 .*expected an object/],
    [{ ...good, Extra: 1 }, /expected exactly Id, Name, NetworkId, IpAddress and Remote/],
    [{ ...good, Id: "x'; Remove-HnsNetwork" }, /its Id is not a GUID/],
    [{ ...good, NetworkId: 'nat' }, /its NetworkId is not a GUID/],
    [{ ...good, IpAddress: '10.244.1.500' }, /its IpAddress is not a dotted IPv4 address/],
    [{ ...good, IpAddress: '010.244.1.5' }, /its IpAddress is not a dotted IPv4 address/],
    [{ ...good, IpAddress: 'fe80::1' }, /its IpAddress is not a dotted IPv4 address/],
    [{ ...good, IpAddress: 167772165 }, /its IpAddress is not a string/],
    [{ ...good, Remote: 'False' }, /its Remote is not true or false/],
    [{ ...good, Name: 'a\u001b[2Jb' }, /its Name is not up to 256 printable characters/],
    [{ ...good, Name: 'x'.repeat(257) }, /its Name is not up to 256 printable characters/],
  ];
  for (const [item, error] of bad)
    assert.throws(() => parseHnsEndpoints([item]), error, JSON.stringify(item));
  assert.throws(
    () => parseHnsEndpoints(Array.from({ length: maxHnsEndpoints + 1 }, () => good)),
    /more than 16384/,
  );
  assert.throws(() => parseHnsEndpointListOutput('[]'), /expected \{"available": true\|false/);
  assert.throws(() => parseHnsEndpointListOutput('not json'), /expected JSON/);
  assert.throws(
    () => parseHnsEndpointListOutput('{"available":true,"endpoints":"10.244.1.5"}'),
    /expected an object/,
  );
});

test('reads what the endpoint remove script prints: 0 or 1, nothing else', () => {
  assert.deepEqual(parseHnsEndpointRemoveOutput(windowsFixture('hns-endpoint-remove-one.json')), {
    available: true,
    removed: 1,
  });
  assert.deepEqual(parseHnsEndpointRemoveOutput('{"available":true,"removed":0}'), {
    available: true,
    removed: 0,
  });
  for (const removed of ['1', 2, -1, 0.5, null])
    assert.throws(
      () => parseHnsEndpointRemoveOutput(JSON.stringify({ available: true, removed })),
      /"removed" is not 0 or 1/,
    );
});

test('the endpoint scripts load Get-HnsEndpoint, map both module flavours, and accept only a GUID and a dotted IPv4 address', async () => {
  const list = listHnsEndpointsScript();
  assert.match(list, /Get-Command -Name 'Get-HnsEndpoint'/);
  assert.match(list, /\$_\.IpConfigurations/);
  assert.match(list, /\$_\.HostComputeNetwork/);
  assert.match(list, /endpoints = @\(\$endpoints\)/);
  await assertValidPowerShell(list, 'HNS endpoint list');
  assert.doesNotThrow(() => powerShellCommandLine(list), 'short enough to send over SSH too');
  const remove = removeHnsEndpointScript(podEndpoint.id.toLowerCase(), '10.244.1.5');
  assert.match(remove, /\[string\]\$_\.ID -eq '9c1b2d3e-4f50-4a6b-8c7d-0e1f2a3b4c5d'/);
  assert.match(remove, /\$ip -eq '10\.244\.1\.5'/);
  assert.match(remove, /\$targets \| Remove-HnsEndpoint/);
  await assertValidPowerShell(remove, 'HNS endpoint remove');
  assert.throws(
    () => removeHnsEndpointScript("x'; Remove-Item C:\\ -Recurse; '", '10.244.1.5'),
    /an HNS endpoint id is a GUID/,
  );
  for (const ip of ["10.244.1.5'; whoami; '", '10.244.1', '10.244.1.05', ''])
    assert.throws(
      () => removeHnsEndpointScript(podEndpoint.id, ip),
      /give its IPv4 address in dotted form/,
    );
  assert.match(
    hnsUnavailableError('list HNS endpoints', [], 'Get-HnsEndpoint').message,
    /^Cannot list HNS endpoints: Get-HnsEndpoint is not available/,
  );
});
