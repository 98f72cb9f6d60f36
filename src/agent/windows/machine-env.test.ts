import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { powerShellPrelude } from '../../powershell/powershell.ts';
import { windowsFixture } from './fixtures.ts';
import { getMachineEnvScript, parseMachineEnvOutput, setMachineEnvScript } from './machine-env.ts';

test('get reads the Machine scope and prints {"value": ...}', async () => {
  const script = getMachineEnvScript('KUBE_NETWORK');
  assert.equal(
    script,
    `${powerShellPrelude}\n$value = [Environment]::GetEnvironmentVariable('KUBE_NETWORK', 'Machine')\nConvertTo-WinfleetJson -InputObject (@{ value = $value }) -Depth 2\n`,
  );
  await assertValidPowerShell(script);
});

test('set quotes the value; undefined and empty remove the variable', async () => {
  const set = setMachineEnvScript('NO_PROXY', "10.0.0.0/8,.svc,it's");
  assert.match(
    set,
    /\n\[Environment\]::SetEnvironmentVariable\('NO_PROXY', '10\.0\.0\.0\/8,\.svc,it''s', 'Machine'\)\n$/,
  );
  await assertValidPowerShell(set);
  for (const value of [undefined, '']) {
    const remove = setMachineEnvScript('NO_PROXY', value);
    assert.match(remove, /SetEnvironmentVariable\('NO_PROXY', \$null, 'Machine'\)/);
    await assertValidPowerShell(remove);
  }
  await assertValidPowerShell(setMachineEnvScript('X', '$(Remove-Item C:\\) `" ‘quoted’'));
});

test('refuses names and values Windows cannot store', () => {
  assert.throws(() => getMachineEnvScript(''), /Cannot use "" as an environment variable name/);
  assert.throws(
    () => setMachineEnvScript('A=B', 'x'),
    /Cannot use "A=B" as an environment variable name; use 1 to 255 characters without "="/,
  );
  assert.throws(
    () => setMachineEnvScript('A', 'x\0y'),
    /Cannot set environment variable "A": its value must be at most 32767 characters without NUL/,
  );
});

test('reads set, unset and non-ASCII values', () => {
  assert.equal(
    parseMachineEnvOutput(windowsFixture('machine-env-set.json'), 'Path'),
    'C:\\Windows\\system32;C:\\Windows;C:\\k',
  );
  assert.equal(parseMachineEnvOutput(windowsFixture('machine-env-unset.json'), 'X'), undefined);
  assert.equal(
    parseMachineEnvOutput(windowsFixture('machine-env-non-ascii.json'), 'X'),
    'C:\\Users\\Jürgen\\k ✓',
  );
  assert.throws(
    () => parseMachineEnvOutput('{"value":3}', 'X'),
    /Cannot read environment variable "X" from \{"value":3\}/,
  );
});
