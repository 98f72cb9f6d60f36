import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../sim/testkit/powershell-grammar.ts';
import {
  cmdExeMaxCommandLine,
  decodePowerShellArgs,
  decodePowerShellCommand,
  decodePowerShellCommandLine,
  encodePowerShellCommand,
  parsePowerShellJson,
  powerShellArgs,
  powerShellCommandLine,
  powerShellErrorText,
  powerShellPrelude,
  powerShellScript,
  quotePowerShellArray,
  quotePowerShellString,
  writeJson,
} from './powershell.ts';

test('quotes strings as single-quoted literals, doubling every quote PowerShell knows', async () => {
  assert.equal(quotePowerShellString('C:\\k'), "'C:\\k'");
  assert.equal(quotePowerShellString("it's"), "'it''s'");
  assert.equal(quotePowerShellString(''), "''");
  // $ and backticks are literal inside single quotes.
  assert.equal(quotePowerShellString('$env:PATH `n "x"'), '\'$env:PATH `n "x"\'');
  // PowerShell also ends a single-quoted string at typographic quotes.
  assert.equal(quotePowerShellString('a\u2019b\u2018c'), "'a\u2019\u2019b\u2018\u2018c'");
  assert.equal(quotePowerShellArray(['a', "b'c"]), "@('a', 'b''c')");
  assert.throws(() => quotePowerShellString('a\0b'), /contains a NUL character/);

  for (const value of ["it's", "'; Remove-Item -Recurse C:\\ ; '", 'x\u201b; y', '$(evil)']) {
    await assertValidPowerShell(`$v = ${quotePowerShellString(value)}`, `literal ${value}`);
  }
});

test('every script starts with the prelude and prints JSON through it', async () => {
  const script = powerShellScript("$r = [ordered]@{ name = 'x'; list = @(1) }", writeJson('$r', 3));
  assert.ok(script.startsWith(powerShellPrelude));
  assert.match(script, /^\$ErrorActionPreference = 'Stop'$/m);
  assert.match(script, /^\$ProgressPreference = 'SilentlyContinue'$/m);
  assert.match(script, /ConvertTo-Json -InputObject \$InputObject -Compress -Depth \$Depth/);
  assert.match(script, /^ConvertTo-WinfleetJson -InputObject \(\$r\) -Depth 3$/m);
  await assertValidPowerShell(script);
  assert.throws(() => writeJson('$r', 0), /Cannot use JSON depth "0"/);
});

test('encodes scripts as base64 UTF-16LE and decodes them back', () => {
  const script = "Write-Output 'héllo ✓'";
  const encoded = encodePowerShellCommand(script);
  assert.equal(encoded, Buffer.from(script, 'utf16le').toString('base64'));
  assert.equal(decodePowerShellCommand(encoded), script);
  // "dir" in UTF-16LE, as in Microsoft's documentation of -EncodedCommand.
  assert.equal(
    decodePowerShellCommand('ZABpAHIAIAAiAGMAOgBcAHAAcgBvAGcAcgBhAG0AIABmAGkAbABlAHMAIgAgAA=='),
    'dir "c:\\program files" ',
  );
  assert.throws(() => decodePowerShellCommand('not base64!'), /it is not base64/);
  assert.throws(() => decodePowerShellCommand('YQ=='), /1 bytes is not UTF-16LE/);
});

test('builds the exact argv and the cmd.exe command line', () => {
  const script = powerShellScript(writeJson('$true'));
  const encoded = encodePowerShellCommand(script);
  assert.deepEqual(powerShellArgs(script), [
    '-NoProfile',
    '-NonInteractive',
    '-InputFormat',
    'None',
    '-ExecutionPolicy',
    'Bypass',
    '-EncodedCommand',
    encoded,
  ]);
  const line = powerShellCommandLine(script);
  assert.equal(
    line,
    `powershell.exe -NoProfile -NonInteractive -InputFormat None -ExecutionPolicy Bypass -EncodedCommand ${encoded}`,
  );
  // Nothing cmd.exe treats specially: no quotes, &, |, <, >, ^, %, !, parentheses.
  assert.doesNotMatch(line, /["&|<>^%!()]/);
});

test('refuses scripts longer than cmd.exe or CreateProcess accept', () => {
  const long = powerShellScript(`$x = '${'a'.repeat(3000)}'`);
  assert.throws(
    () => powerShellCommandLine(long),
    new RegExp(
      `too long for cmd.exe: its command line has \\d+ characters, more than ${cmdExeMaxCommandLine}`,
    ),
  );
  assert.doesNotThrow(() => powerShellArgs(long));
  assert.throws(
    () => powerShellArgs(`$x = '${'a'.repeat(13000)}'`),
    /too long to run: its command line has \d+ characters, more than 32767/,
  );
});

test('decodes command lines the operator sends, for the simulated hosts', () => {
  const script = powerShellScript("Write-Output 'x'");
  assert.equal(decodePowerShellCommandLine(powerShellCommandLine(script)), script);
  const encoded = encodePowerShellCommand('dir');
  assert.equal(decodePowerShellCommandLine(`PowerShell -enc ${encoded}`), 'dir');
  assert.equal(decodePowerShellCommandLine(`powershell -NoProfile -e ${encoded}`), 'dir');
  assert.equal(decodePowerShellCommandLine(`powershell /ec ${encoded}`), 'dir');
  assert.equal(
    decodePowerShellCommandLine(
      `"C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe" -EncodedCommand ${encoded}`,
    ),
    'dir',
  );
  assert.equal(decodePowerShellCommandLine('powershell -Command dir'), undefined);
  assert.equal(decodePowerShellCommandLine('-ExecutionPolicy Bypass'), undefined);
  assert.equal(decodePowerShellCommandLine(`cmd.exe /c -EncodedCommand ${encoded}`), undefined);
  assert.equal(decodePowerShellCommandLine(''), undefined);
  assert.throws(() => decodePowerShellCommandLine('powershell -EncodedCommand'), /has no value/);
  assert.equal(decodePowerShellArgs(powerShellArgs(script)), script);
  // -ExecutionPolicy is not mistaken for -EncodedCommand.
  assert.equal(decodePowerShellArgs(['-ExecutionPolicy', 'Bypass']), undefined);
});

test('reads one line of JSON, or the last line after warnings', () => {
  assert.deepEqual(parsePowerShellJson('{"a":1}\r\n', 'x'), { a: 1 });
  assert.deepEqual(parsePowerShellJson('\uFEFF[\r\n    1\r\n]\r\n', 'x'), [1]);
  assert.deepEqual(
    parsePowerShellJson(
      'WARNING: The names of some imported commands ...\r\n{"a":"\\u00e9"}\r\n',
      'x',
    ),
    { a: 'é' },
  );
  assert.throws(
    () => parsePowerShellJson('\r\n', 'the OS version'),
    /Cannot read the OS version: PowerShell printed nothing/,
  );
  assert.throws(
    () => parsePowerShellJson('Access is denied.\r\n', 'the OS version'),
    /Cannot read the OS version from PowerShell output "Access is denied\.": expected JSON/,
  );
});

test('extracts error lines from CLIXML stderr and drops progress records', () => {
  // The shape Windows PowerShell 5.1 writes: CRLF after the marker, a progress record from its
  // first module load, then the error view line by line with escaped CR LF.
  const stderr =
    '#< CLIXML\r\n<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04">' +
    '<Obj S="progress" RefId="0"><TN RefId="0"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN>' +
    '<MS><I64 N="SourceId">1</I64><PR N="Record"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI>' +
    '<PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj>' +
    '<S S="Error">Get-HnsNetwork : The term \'Get-HnsNetwork\' is not recognized as the name of a cmdlet, function, script file, or operable _x000D__x000A_</S>' +
    '<S S="Error">program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again._x000D__x000A_</S>' +
    '<S S="Error">At line:1 char:1_x000D__x000A_</S>' +
    '<S S="Error">    + CategoryInfo          : ObjectNotFound: (Get-HnsNetwork:String) [], CommandNotFoundException_x000D__x000A_</S>' +
    '<S S="Error">    + FullyQualifiedErrorId : CommandNotFoundException_x000D__x000A_</S>' +
    '<S S="Error"> _x000D__x000A_</S></Objs>';
  assert.equal(
    powerShellErrorText(stderr),
    [
      "Get-HnsNetwork : The term 'Get-HnsNetwork' is not recognized as the name of a cmdlet, function, script file, or operable ",
      'program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.',
      'At line:1 char:1',
      '    + CategoryInfo          : ObjectNotFound: (Get-HnsNetwork:String) [], CommandNotFoundException',
      '    + FullyQualifiedErrorId : CommandNotFoundException',
    ].join('\n'),
  );
  assert.equal(
    powerShellErrorText(
      '#< CLIXML\r\n<Objs Version="1.1.0.1"><S S="Error">a &lt;b&gt; &amp; _x005F_c</S></Objs>',
    ),
    'a <b> & _c',
  );
  assert.equal(powerShellErrorText('  plain error\r\n'), 'plain error');
});
