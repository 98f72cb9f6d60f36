import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { containersFeatureScript, parseContainersFeatureOutput } from './containers-feature.ts';

test('the script is valid PowerShell reading Get-WindowsFeature, Unknown without it', async () => {
  const script = containersFeatureScript();
  assert.match(script, /Get-Command -Name 'Get-WindowsFeature'/);
  assert.match(script, /Get-WindowsFeature -Name 'Containers'/);
  await assertValidPowerShell(script);
});

test('each InstallState reads back; anything else is refused', () => {
  for (const state of [
    'Installed',
    'Available',
    'InstallPending',
    'UninstallPending',
    'Removed',
    'Unknown',
  ])
    assert.equal(parseContainersFeatureOutput(JSON.stringify({ state })), state);
  for (const hostile of [
    '{"state":"installed"}',
    '{"state":"Installed","extra":1}',
    '{"state":1}',
    '["Installed"]',
    '{}',
    'Installed',
  ])
    assert.throws(
      () => parseContainersFeatureOutput(hostile),
      /Containers feature|PowerShell|JSON/,
      hostile,
    );
});
