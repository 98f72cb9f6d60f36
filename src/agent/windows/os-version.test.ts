import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { windowsFixture } from './fixtures.ts';
import { osVersionScript, parseOsVersionOutput } from './os-version.ts';

test('the script reads the five registry values', async () => {
  const script = osVersionScript();
  assert.match(
    script,
    /Get-ItemProperty -LiteralPath 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion'/,
  );
  assert.match(
    script,
    /Select-Object -Property 'CurrentMajorVersionNumber', 'CurrentMinorVersionNumber', 'CurrentBuildNumber', 'UBR', 'ProductName'/,
  );
  await assertValidPowerShell(script);
});

test('reads Windows Server 2019, 2022 and 2025', () => {
  assert.deepEqual(parseOsVersionOutput(windowsFixture('registry-currentversion-2019.json')), {
    major: 10,
    minor: 0,
    build: 17763,
    ubr: 6293,
    productName: 'Windows Server 2019 Datacenter',
  });
  assert.deepEqual(parseOsVersionOutput(windowsFixture('registry-currentversion-2022.json')), {
    major: 10,
    minor: 0,
    build: 20348,
    ubr: 2582,
    productName: 'Windows Server 2022 Datacenter',
  });
  const v2025 = parseOsVersionOutput(windowsFixture('registry-currentversion-2025.json'));
  assert.equal(`${v2025.major}.${v2025.minor}.${v2025.build}.${v2025.ubr}`, '10.0.26100.1742');
});

test('says which value is missing', () => {
  // Windows Server 2012 R2 has no CurrentMajorVersionNumber.
  assert.throws(
    () =>
      parseOsVersionOutput(
        '{"CurrentMajorVersionNumber":null,"CurrentMinorVersionNumber":null,"CurrentBuildNumber":"9600","UBR":20778,"ProductName":"Windows Server 2012 R2 Datacenter"}',
      ),
    /Cannot read the Windows version: CurrentMajorVersionNumber is null, expected a number; winfleet needs Windows Server 2019 or later/,
  );
  assert.throws(() => parseOsVersionOutput('null'), /Cannot read the Windows version from null/);
});
