import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import {
  ccgComClassesKey,
  gmsaHostFactsScript,
  maxCcgPlugins,
  parseGmsaHostFactsOutput,
} from './gmsa-host-facts.ts';

const azurePlugin = '{CCC2A336-D7F3-4818-A213-272B7924213E}';
const out = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    partOfDomain: true,
    domain: 'corp.example.com',
    ccgExe: true,
    ccgKey: true,
    plugins: [],
    ...over,
  });

test('the script reads the domain, ccg.exe and the CCG plug-ins, and parses as PowerShell', async () => {
  const script = gmsaHostFactsScript();
  assert.match(script, /Get-CimInstance -ClassName Win32_ComputerSystem/);
  assert.match(script, /System32\\ccg\.exe/);
  assert.ok(script.includes(`'${ccgComClassesKey}'`));
  assert.match(script, /Registry::HKEY_CLASSES_ROOT\\CLSID\\/);
  assert.match(script, new RegExp(`Select-Object -First ${maxCcgPlugins}\\)`));
  assert.doesNotMatch(script, /Set-|New-Item|Remove-/, 'it only reads');
  await assertValidPowerShell(script, 'gMSA host facts');
});

test('parses a domain-joined host, a workgroup host with a plug-in, and one without CCG', () => {
  assert.deepEqual(parseGmsaHostFactsOutput(out()), {
    partOfDomain: true,
    domain: 'corp.example.com',
    ccgAvailable: true,
    ccgPlugins: [],
  });
  assert.deepEqual(
    parseGmsaHostFactsOutput(
      `WARNING: x\r\n${out({
        partOfDomain: false,
        domain: 'WORKGROUP',
        plugins: [{ clsid: azurePlugin, comClassRegistered: true }],
      })}`,
    ),
    {
      partOfDomain: false,
      domain: 'WORKGROUP',
      ccgAvailable: true,
      ccgPlugins: [{ clsid: azurePlugin, comClassRegistered: true }],
    },
  );
  assert.equal(parseGmsaHostFactsOutput(out({ ccgExe: false })).ccgAvailable, false);
  assert.equal(parseGmsaHostFactsOutput(out({ ccgKey: false })).ccgAvailable, false);
});

test('attacker side: the structure is refused unless exactly the script’s', () => {
  const refused: [string, RegExp][] = [
    ['', /printed nothing/],
    [out({ extra: 1 }), /expected partOfDomain, domain, ccgExe, ccgKey, plugins/],
    [out({ partOfDomain: 'true' }), /partOfDomain is not a boolean/],
    [out({ domain: 'corp example' }), /domain is not a domain or workgroup name/],
    [out({ domain: 'corp\u202Emoc' }), /domain is not a domain or workgroup name/],
    [out({ domain: 'a'.repeat(254) }), /domain is not a domain or workgroup name/],
    [out({ plugins: { clsid: azurePlugin, comClassRegistered: true } }), /plugins is not a list/],
    [out({ plugins: [{ clsid: 'not-a-clsid', comClassRegistered: true }] }), /clsid is not/],
    [
      out({ plugins: [{ clsid: azurePlugin, comClassRegistered: 'yes' }] }),
      /plugins\[0\]\.comClassRegistered is not a boolean/,
    ],
    [
      out({ ccgKey: false, plugins: [{ clsid: azurePlugin, comClassRegistered: true }] }),
      /plugins listed without the CCG COMClasses key/,
    ],
    [
      out({
        plugins: Array.from({ length: maxCcgPlugins + 1 }, () => ({
          clsid: azurePlugin,
          comClassRegistered: true,
        })),
      }),
      /more than 16 plugins/,
    ],
  ];
  for (const [stdout, message] of refused) {
    assert.throws(() => parseGmsaHostFactsOutput(stdout), message, stdout.slice(0, 80));
  }
});
