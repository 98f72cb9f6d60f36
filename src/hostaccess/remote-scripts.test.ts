import assert from 'node:assert/strict';
import { test } from 'node:test';
import { powerShellReadsStdin } from '../../sim/hosts/remote-commands.ts';
import { assertValidPowerShell } from '../../sim/testkit/powershell-grammar.ts';
import { decodePowerShellCommandLine } from '../powershell/powershell.ts';
import {
  identifyRemoteScript,
  type RemoteScriptName,
  type RemoteScripts,
  remoteCommand,
  remoteScript,
} from './remote-scripts.ts';

const samples: { [K in RemoteScriptName]: RemoteScripts[K] } = {
  'host-facts': {},
  'file-hashes': { paths: ["C:\\k\\winfleet\\it's here.exe", 'C:\\k\\kubelet.exe'] },
  'ensure-directory': {
    path: 'C:\\k\\winfleet\\payload',
    record: 'C:\\k\\winfleet\\created-directories.txt',
  },
  'protect-directory': { path: 'C:\\k' },
  'run-agent': { args: ['bootstrap', '--config', 'C:\\k\\winfleet\\bootstrap.json'] },
  'remove-path': { path: 'C:\\k\\winfleet' },
  'replace-file': {
    source: 'C:\\k\\winfleet\\winfleet-agent.exe.new',
    target: 'C:\\k\\winfleet\\winfleet-agent.exe',
  },
  'install-windows-feature': { name: 'Containers' },
  'restart-host': {},
  'preflight-facts': {},
  'hyperv-facts': {},
  diagnostic: { item: 'events-system', hours: 6 },
  'rename-computer': { newName: 'web-1f2e3d' },
  'join-domain': {
    domain: 'corp.example.com',
    organizationalUnit: "OU=K8s,DC=corp,DC=example,DC=com'; Remove-Item C:\\ -Recurse; '",
  },
  'leave-domain': { domain: 'corp.example.com' },
};

for (const [name, args] of Object.entries(samples) as [RemoteScriptName, never][]) {
  test(`${name}: parses as PowerShell and round-trips through the SSH command line`, async () => {
    const script = remoteScript(name, args);
    await assertValidPowerShell(script, name);
    const line = remoteCommand(name, args);
    assert.match(
      line,
      /^powershell\.exe -NoProfile -NonInteractive -InputFormat None -ExecutionPolicy Bypass -EncodedCommand [A-Za-z0-9+/=]+$/,
    );
    const decoded = decodePowerShellCommandLine(line);
    assert.equal(decoded, script);
    assert.deepEqual(identifyRemoteScript(decoded!), { name, args });
  });
}

test('a script that is not from the catalog is not identified', () => {
  assert.equal(identifyRemoteScript('Get-Process'), undefined);
  assert.equal(
    identifyRemoteScript(
      "# winfleet-script: format-disk\n$winfleetArgs = ConvertFrom-Json -InputObject '{}'",
    ),
    undefined,
  );
});

test('protect-directory names SYSTEM and Administrators by SID and turns inheritance off', () => {
  const script = remoteScript('protect-directory', { path: 'C:\\k' });
  assert.match(script, /\$acl\.SetAccessRuleProtection\(\$true, \$false\)/);
  assert.match(script, /@\('S-1-5-18', 'S-1-5-32-544'\)/);
  assert.match(script, /SetOwner\(.*'S-1-5-32-544'/);
  assert.match(script, /'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow'/);
  assert.match(script, /Set-Acl -LiteralPath \$winfleetArgs\.path -AclObject \$acl/);
  assert.doesNotMatch(script, /Administrators|SYSTEM|Users/, 'no localized account names');
});

test('every catalog command line tells powershell.exe there is no input (-InputFormat None)', () => {
  for (const [name, args] of Object.entries(samples) as [RemoteScriptName, never][]) {
    const line = remoteCommand(name, args);
    assert.match(line, / -InputFormat None /, name);
    assert.equal(powerShellReadsStdin(line), false, name);
  }
});
