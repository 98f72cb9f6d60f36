import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { decodePowerShellArgs, powerShellPrelude } from '../../powershell/powershell.ts';
import { kubeletFirewallRule } from '../kubelet-firewall.ts';
import type { CommandRunner } from './command-runner.ts';
import {
  ensureInboundFirewallRuleScript,
  parseEnsureFirewallRuleOutput,
  parseRemoveFirewallRuleOutput,
  removeFirewallRuleScript,
} from './firewall.ts';
import { WindowsHostOS } from './windows-host-os.ts';

test('the ensure script finds the rule by Name, then creates it or brings it in line', async () => {
  const script = ensureInboundFirewallRuleScript(kubeletFirewallRule);
  assert.ok(script.startsWith(powerShellPrelude));
  assert.match(script, /\$rule = Get-NetFirewallRule -Name \$name -ErrorAction SilentlyContinue\n/);
  assert.match(script, /\$name = 'winfleet-kubelet'\n/);
  for (const setting of [
    "Direction = 'Inbound'",
    "Action = 'Allow'",
    "Protocol = 'TCP'",
    "LocalPort = '10250'",
    "Profile = 'Any'",
    "Enabled = 'True'",
  ]) {
    assert.ok(script.includes(`  ${setting}\n`), setting);
  }
  assert.match(
    script,
    /New-NetFirewallRule -Name \$name -DisplayName 'winfleet kubelet API \(TCP 10250\)' @settings \| Out-Null/,
  );
  // Set-NetFirewallRule selects by -Name; the display name is changed with -NewDisplayName.
  assert.match(
    script,
    /Set-NetFirewallRule -Name \$name -NewDisplayName 'winfleet kubelet API \(TCP 10250\)' @settings/,
  );
  await assertValidPowerShell(script, 'firewall rule');
  await assertValidPowerShell(
    ensureInboundFirewallRuleScript({ ...kubeletFirewallRule, description: "it's quoted" }),
    'firewall rule',
  );
});

test('the remove script removes every rule of that Name and a missing one is no error', async () => {
  const script = removeFirewallRuleScript('winfleet-kubelet');
  assert.match(
    script,
    /\$rules = @\(Get-NetFirewallRule -Name 'winfleet-kubelet' -ErrorAction SilentlyContinue\)\nif \(\$rules\.Count -gt 0\) \{ \$rules \| Remove-NetFirewallRule \}/,
  );
  await assertValidPowerShell(script, 'firewall rule removal');
});

test('names, ports and protocols outside what a rule takes are refused, the value quoted', () => {
  assert.throws(
    () => removeFirewallRuleScript("x'; Remove-NetFirewallRule -All; '"),
    /Cannot use "x'; Remove-NetFirewallRule -All; '" as a firewall rule name/,
  );
  assert.throws(() => removeFirewallRuleScript(''), /Cannot use "" as a firewall rule name/);
  assert.throws(
    () => ensureInboundFirewallRuleScript({ ...kubeletFirewallRule, localPort: 0 }),
    /Cannot open port 0 in firewall rule "winfleet-kubelet"; use a port from 1 to 65535/,
  );
  assert.throws(
    () =>
      ensureInboundFirewallRuleScript({
        ...kubeletFirewallRule,
        protocol: 'ICMP' as unknown as 'TCP',
      }),
    /Cannot use protocol "ICMP" in firewall rule "winfleet-kubelet"; use TCP or UDP/,
  );
});

test('the outputs are read strictly', () => {
  assert.deepEqual(parseEnsureFirewallRuleOutput('{"created":true}\r\n'), { created: true });
  assert.deepEqual(parseRemoveFirewallRuleOutput('{"removed":0}\r\n'), { removed: 0 });
  assert.throws(() => parseEnsureFirewallRuleOutput('{"created":"yes"}'), /expected \{"created"/);
  assert.throws(() => parseRemoveFirewallRuleOutput('{"removed":-1}'), /"removed" is not a count/);
});

test('WindowsHostOS runs the scripts through powershell.exe and reports a failure with its text', async () => {
  const scripts: string[] = [];
  const answers = [
    { exitCode: 0, stdout: '{"created":false}\r\n', stderr: '' },
    { exitCode: 0, stdout: '{"removed":1}\r\n', stderr: '' },
    {
      exitCode: 1,
      stdout: '',
      stderr:
        '#< CLIXML\r\n<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04"><S S="Error">New-NetFirewallRule : Access is denied._x000D__x000A_</S></Objs>',
    },
  ];
  const run: CommandRunner = async (file, args) => {
    assert.match(file, /powershell\.exe$/);
    scripts.push(decodePowerShellArgs(args)!);
    return answers.shift()!;
  };
  const host = new WindowsHostOS({ run, systemRoot: 'D:\\Win' });
  await host.ensureInboundFirewallRule(kubeletFirewallRule);
  await host.removeFirewallRule('winfleet-kubelet');
  await assert.rejects(host.ensureInboundFirewallRule(kubeletFirewallRule), {
    code: 'WF_WINDOWS_COMMAND_FAILED',
    message:
      'Cannot open TCP port 10250 with firewall rule "winfleet-kubelet": PowerShell exited with 1: New-NetFirewallRule : Access is denied.',
  });
  assert.equal(scripts[0], ensureInboundFirewallRuleScript(kubeletFirewallRule));
  assert.equal(scripts[1], removeFirewallRuleScript('winfleet-kubelet'));
});
