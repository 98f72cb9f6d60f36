import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell, parsePowerShell } from './powershell-grammar.ts';

test('accepts valid scripts', async () => {
  const scripts = [
    "$ErrorActionPreference = 'Stop'\nWrite-Output 'it''s'",
    "if ($a -eq 1) { 'one' } elseif ($a) { 'some' } else { 'none' }",
    "try { Get-Item -LiteralPath 'C:\\k' } catch { throw } finally { $x = $null }",
    "foreach ($p in @('a', 'b')) { if (Test-Path -LiteralPath $p) { break } }",
    "$h = [ordered]@{ a = 1; b = @('x', 'y') }\n$h | ConvertTo-Json -Compress -Depth 3",
    "[Environment]::SetEnvironmentVariable('A', $null, 'Machine')",
    'function F {\n  param([string] $Name, [int] $N = 2)\n  "$Name $N"\n}\nF -Name \'x\'',
    "Get-Service | Where-Object { $_.Status -eq 'Running' } | Select-Object -Property 'Name', 'Status'",
    '# comment\n<# block\ncomment #>\nexit 0',
  ];
  for (const script of scripts) {
    assert.deepEqual(await parsePowerShell(script), [], script);
  }
});

test('rejects unbalanced braces with a missing "}" or an unexpected token', async () => {
  const missing = await parsePowerShell("foreach ($a in $b) { Write-Output $a\n$c = 'd'");
  assert.ok(missing.length > 0);
  assert.ok(missing.some((e) => e.kind === 'missing' && e.text === '}'));

  const extra = await parsePowerShell('Write-Output 1\n}');
  assert.deepEqual(extra, [{ kind: 'unexpected', line: 2, column: 1, text: '}' }]);

  assert.ok((await parsePowerShell('$x = @{ a = 1 ')).length > 0);
  assert.ok((await parsePowerShell('function F { param($a }')).length > 0);
});

test('rejects bad string quoting', async () => {
  // The generator's classic bug: an apostrophe that was not doubled.
  assert.ok((await parsePowerShell("$x = 'it's'")).length > 0);
  assert.ok((await parsePowerShell('Write-Output "abc')).length > 0);
  assert.ok((await parsePowerShell("$x = 'abc")).length > 0);
});

test('rejects stray tokens', async () => {
  const errors = await parsePowerShell('$x = (1 + 2))');
  assert.deepEqual(errors, [{ kind: 'unexpected', line: 1, column: 13, text: ')' }]);
  assert.ok((await parsePowerShell("Get-Item 'x' | | Out-Null")).length > 0);
});

test('assertValidPowerShell names the line to fix', async () => {
  await assertValidPowerShell("Write-Output 'ok'");
  await assert.rejects(
    assertValidPowerShell("Write-Output 'ok'\n$x = 'it's'", 'env script'),
    /PowerShell env script has 1 syntax error\(s\); fix the generator:\n {2}line 2, column 1: unexpected "\$x = 'it's'"\n {4}\$x = 'it's'/,
  );
});
