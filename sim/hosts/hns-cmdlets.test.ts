import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createHnsNetworkScript,
  listHnsNetworksScript,
  removeHnsEndpointScript,
} from '../../src/agent/windows/hns.ts';
import { assertHnsCmdletsExist } from './hns-cmdlets.ts';

test('a script calling New-HnsNetwork fails as PowerShell does on a host with only the built-in module', () => {
  const old = [
    "if (-not (Get-Command -Name 'Get-HnsNetwork' -ErrorAction SilentlyContinue)) { exit 0 }",
    "$network = New-HnsNetwork -Type L2Bridge -Name 'winfleet' -AddressPrefix '10.244.1.0/24' -Gateway '10.244.1.1'",
  ].join('\n');
  assert.throws(
    () => assertHnsCmdletsExist(old),
    /^Error: New-HnsNetwork : The term 'New-HnsNetwork' is not recognized as the name of a cmdlet, function, script file, or operable program/,
  );
  // Naming a command in a string is not calling it.
  assert.doesNotThrow(() => assertHnsCmdletsExist("Get-Command -Name 'New-HnsNetwork'"));
});

test('winfleet’s HNS scripts call only the built-in module’s cmdlets (the network through HcnCreateNetwork)', () => {
  const create = createHnsNetworkScript({
    name: 'winfleet',
    type: 'L2Bridge',
    addressPrefix: '10.244.1.0/24',
    gateway: '10.244.1.1',
  });
  assert.match(
    create,
    /\[WinfleetHcn\]::HcnCreateNetwork\(\[ref\]\$id, '\{"SchemaVersion":\{"Major":2,"Minor":0\},"Name":"winfleet","Type":"L2Bridge"/,
  );
  assert.match(create, /DllImport\("computenetwork\.dll"/);
  for (const script of [
    create,
    listHnsNetworksScript(),
    removeHnsEndpointScript('0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0', '10.244.1.5'),
  ])
    assert.doesNotThrow(() => assertHnsCmdletsExist(script));
});
