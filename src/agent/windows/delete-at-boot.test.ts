import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { deleteAtBootScript } from './delete-at-boot.ts';

test('the delete-at-boot script parses, quotes the path and asks for MOVEFILE_DELAY_UNTIL_REBOOT', async () => {
  const script = deleteAtBootScript("C:\\k\\winfleet\\it's.exe");
  await assertValidPowerShell(script, 'delete at boot');
  // A NULL new name, not the empty string $null would become (PowerShell's conversion).
  assert.match(
    script,
    /MoveFileEx\('C:\\k\\winfleet\\it''s\.exe', \[System\.Management\.Automation\.Language\.NullString\]::Value, 4\)/,
  );
  assert.doesNotMatch(script, /\$null/);
  assert.match(script, /GetLastWin32Error/);
});

test('the delete-at-boot script refuses a relative path', () => {
  assert.throws(() => deleteAtBootScript('winfleet-agent.exe'), /absolute Windows path/);
  assert.throws(() => deleteAtBootScript('C:\\k\0x'), /absolute Windows path/);
});
