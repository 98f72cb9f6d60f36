import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';
import { reserveCniAddressScript } from '../../src/agent/windows/cni-address.ts';
import { containersFeatureScript } from '../../src/agent/windows/containers-feature.ts';
import { defenderThreatsScript } from '../../src/agent/windows/defender.ts';
import { deleteAtBootScript } from '../../src/agent/windows/delete-at-boot.ts';
import {
  ensureInboundFirewallRuleScript,
  removeFirewallRuleScript,
} from '../../src/agent/windows/firewall.ts';
import { gmsaHostFactsScript } from '../../src/agent/windows/gmsa-host-facts.ts';
import {
  createHnsNetworkScript,
  listHnsEndpointsScript,
  listHnsNetworksScript,
  removeHnsEndpointScript,
  removeHnsNetworkScript,
} from '../../src/agent/windows/hns.ts';
import { ipv4NetworkScript } from '../../src/agent/windows/ipv4-network.ts';
import { getMachineEnvScript, setMachineEnvScript } from '../../src/agent/windows/machine-env.ts';
import { osVersionScript } from '../../src/agent/windows/os-version.ts';
import {
  addRootCertificateScript,
  listRootCertificatesScript,
  removeRootCertificateScript,
  setWinHttpProxyScript,
} from '../../src/agent/windows/root-certificates.ts';
import {
  getServiceEnvironmentScript,
  setServiceEnvironmentScript,
} from '../../src/agent/windows/service-environment.ts';
import { serviceFailuresScript } from '../../src/agent/windows/service-failures.ts';
import {
  installUpdatesScript,
  rebootPendingScript,
  searchUpdatesScript,
} from '../../src/agent/windows/windows-update.ts';
import { installedHotfixesScript } from '../../src/agent/windows/windows-update-msu.ts';
import {
  type RemoteScriptName,
  type RemoteScripts,
  remoteScript,
} from '../../src/hostaccess/remote-scripts.ts';
import { powerShellJoinScript } from '../../src/join/scripts/powershell.ts';
import {
  type JoinScriptValues,
  joinScriptFormats,
  renderJoinScript,
} from '../../src/join/scripts/render-join-script.ts';
import { createCertificateAuthority } from '../../src/pki/certificates.ts';
import { powerShellScript } from '../../src/powershell/powershell.ts';
import { type PowerShellNode, parsePowerShellTree } from '../testkit/powershell-grammar.ts';
import {
  assertCommandsExist,
  CommandNotFoundError,
  calledCommands,
  commandModule,
  isCommandName,
  missingCommand,
  type PowerShellHost,
  powerShellModules,
  windowsServerReleases,
} from './powershell-modules.ts';

const repo = fileURLToPath(new URL('../../', import.meta.url));

/** A host of `release` with every feature a module needs (Containers, RSAT-AD-PowerShell). */
function fullHost(release: PowerShellHost['release']): PowerShellHost {
  return { release, featureInstalled: () => true };
}

/** Every PowerShell script winfleet builds, with sample arguments. */
async function builtScripts(): Promise<Map<string, string>> {
  const ca = await createCertificateAuthority('Corp Root CA');
  const scripts = new Map<string, string>([
    [
      'reserveCniAddressScript',
      reserveCniAddressScript({
        binDir: 'C:\\k\\cni\\bin',
        network: 'winfleet',
        subnet: '10.244.1.0/24',
        containerId: 'winfleet-bridge',
        address: '10.244.1.2',
      }),
    ],
    ['containersFeatureScript', containersFeatureScript()],
    ['defenderThreatsScript', defenderThreatsScript()],
    ['deleteAtBootScript', deleteAtBootScript('C:\\k\\winfleet\\old.exe')],
    [
      'ensureInboundFirewallRuleScript',
      ensureInboundFirewallRuleScript({
        name: 'winfleet-kubelet',
        displayName: 'winfleet kubelet',
        description: 'kubelet API',
        protocol: 'TCP',
        localPort: 10250,
      }),
    ],
    ['removeFirewallRuleScript', removeFirewallRuleScript('winfleet-kubelet')],
    ['gmsaHostFactsScript', gmsaHostFactsScript()],
    [
      'createHnsNetworkScript',
      createHnsNetworkScript({
        name: 'winfleet',
        type: 'L2Bridge',
        addressPrefix: '10.244.1.0/24',
        gateway: '10.244.1.1',
      }),
    ],
    ['listHnsNetworksScript', listHnsNetworksScript()],
    ['removeHnsNetworkScript', removeHnsNetworkScript('5f0ba94e-3f4b-4c0e-8c79-4e5b3c1d8b21')],
    ['listHnsEndpointsScript', listHnsEndpointsScript()],
    [
      'removeHnsEndpointScript',
      removeHnsEndpointScript('0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0', '10.244.1.5'),
    ],
    ['ipv4NetworkScript', ipv4NetworkScript()],
    ['getMachineEnvScript', getMachineEnvScript('HTTPS_PROXY')],
    ['setMachineEnvScript', setMachineEnvScript('HTTPS_PROXY', 'http://proxy:3128')],
    ['osVersionScript', osVersionScript()],
    ['listRootCertificatesScript', listRootCertificatesScript()],
    ['addRootCertificateScript', addRootCertificateScript(ca.certPem)],
    ['removeRootCertificateScript', removeRootCertificateScript('A'.repeat(40))],
    [
      'setWinHttpProxyScript',
      setWinHttpProxyScript({ proxyServer: 'proxy:3128', bypassList: '<local>' }),
    ],
    ['getServiceEnvironmentScript', getServiceEnvironmentScript('kubelet')],
    ['setServiceEnvironmentScript', setServiceEnvironmentScript('kubelet', ['A=b'])],
    ['serviceFailuresScript', serviceFailuresScript('kubelet', 1_700_000_000_000)],
    ['installedHotfixesScript', installedHotfixesScript()],
    ['searchUpdatesScript', searchUpdatesScript()],
    ['installUpdatesScript', installUpdatesScript(['KB5040437'])],
    ['rebootPendingScript', rebootPendingScript()],
    // The prelude every script starts with.
    ['powerShellScript', powerShellScript()],
  ]);
  const samples: { [K in RemoteScriptName]: RemoteScripts[K] } = {
    'host-facts': {},
    'file-hashes': { paths: ['C:\\k\\kubelet.exe'] },
    'ensure-directory': {
      path: 'C:\\k\\winfleet\\payload',
      record: 'C:\\k\\winfleet\\created-directories.txt',
    },
    'protect-directory': { path: 'C:\\k' },
    'run-agent': { args: ['bootstrap'] },
    'remove-path': { path: 'C:\\k\\winfleet' },
    'replace-file': { source: 'C:\\k\\a.new', target: 'C:\\k\\a' },
    'install-windows-feature': { name: 'Containers' },
    'restart-host': {},
    'preflight-facts': {},
    'hyperv-facts': {},
    diagnostic: { item: 'events-system', hours: 6 },
    'rename-computer': { newName: 'web-1f2e3d' },
    'join-domain': { domain: 'corp.example.com', organizationalUnit: 'OU=K8s,DC=corp' },
    'leave-domain': { domain: 'corp.example.com' },
  };
  for (const [name, args] of Object.entries(samples) as [RemoteScriptName, never][])
    scripts.set(`remote-scripts "${name}"`, remoteScript(name, args));
  const join: JoinScriptValues = {
    agentUrl: 'https://registry.example.com/v2/winfleet/payload/blobs/sha256:abc',
    agentSha256: 'f'.repeat(64),
    apiServer: 'https://k8s.example.com:6443',
    token: 'abcdef.0123456789abcdef',
    caCertHash: `sha256:${'c'.repeat(64)}`,
    namespace: 'winfleet',
    nodeName: 'win-1',
  };
  scripts.set('powerShellJoinScript', powerShellJoinScript(join));
  for (const format of joinScriptFormats)
    scripts.set(`renderJoinScript --format ${format}`, renderJoinScript(format, join));
  scripts.set('renderJoinScript', scripts.get('renderJoinScript --format powershell')!);
  return scripts;
}

/** Product files under src/ that build PowerShell (the script builders this test must call). */
function sourceFiles(dir = join(repo, 'src')): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}

function commandNames(node: PowerShellNode, out: string[] = []): string[] {
  if (node.type === 'command_name') out.push(node.text);
  for (const child of node.children) commandNames(child, out);
  return out;
}

test('the table: each module sourced, on every supported release, no cmdlet in two modules', () => {
  const seen = new Map<string, string>();
  for (const module of powerShellModules) {
    assert.match(module.source, /^https:\/\/learn\.microsoft\.com\/powershell\/module\//);
    assert.deepEqual([...module.releases], [...windowsServerReleases], module.name);
    for (const cmdlet of module.cmdlets) {
      assert.ok(isCommandName(cmdlet), `${module.name}: ${cmdlet}`);
      assert.equal(seen.get(cmdlet.toLowerCase()), undefined, `${cmdlet} in two modules`);
      seen.set(cmdlet.toLowerCase(), module.name);
    }
  }
  // The built-in HNS module exports Get-/Remove- only; PSWindowsUpdate ships with no Windows.
  for (const absent of ['New-HnsNetwork', 'New-HnsEndpoint', 'Install-WindowsUpdate'])
    assert.equal(commandModule(absent), undefined, absent);
});

test('every script winfleet builds calls only commands every supported release has', async () => {
  const scripts = await builtScripts();
  // Every exported *Script builder under src/ is among them: a new script is checked too.
  const builders = sourceFiles().flatMap((file) =>
    [
      ...readFileSync(file, 'utf8').matchAll(
        /^export function (\w+Script)\([^{]*?\):\s*string\s*\{/gm,
      ),
    ]
      .filter((m) => m[1] !== 'remoteScript')
      .map((m) => ({ name: m[1]!, file: relative(repo, file) })),
  );
  assert.ok(builders.length >= 25, `found ${builders.length} script builders`);
  for (const { name, file } of builders)
    assert.ok(scripts.has(name), `${file}: ${name} is not checked here; add it to builtScripts`);

  const problems: string[] = [];
  const allCalled = new Set<string>();
  for (const [label, script] of scripts) {
    const called = calledCommands(script);
    for (const c of called) allCalled.add(c.toLowerCase());
    for (const release of windowsServerReleases) {
      const missing = missingCommand(script, fullHost(release));
      if (missing)
        problems.push(`${label}: ${missing} is on no module of Windows Server ${release}`);
    }
    // The grammar's own view of the commands: every Verb-Noun command it sees is one the
    // scanner saw, guarded by Get-Command, or defined by the script.
    const { root } = await parsePowerShellTree(
      script.replace(/^#ps1_sysnative\n|<\/?powershell>/g, ''),
    );
    for (const name of commandNames(root)) {
      if (!isCommandName(name)) continue;
      const key = name.toLowerCase();
      if (allCalled.has(key) || commandModule(name)) continue;
      if (new RegExp(`function\\s+${name}\\b`, 'i').test(script)) continue;
      if (new RegExp(`Get-Command\\s+(-Name\\s+)?'${name}'`, 'i').test(script)) continue;
      problems.push(`${label}: the grammar sees ${name}, which the scanner missed`);
    }
  }
  assert.deepEqual(problems, []);
  // The scan sees what the scripts do.
  for (const expected of ['install-windowsfeature', 'add-computer', 'get-winevent', 'set-acl'])
    assert.ok(allCalled.has(expected), expected);
});

test('every command named in product code exists on every supported release', () => {
  // Any Verb-Noun command in src/ outside comments (scripts, but also advice in messages such
  // as "Install-WindowsFeature -Name Containers"), less what a script defines (function …)
  // and script file names (Install-WindowsCNI.ps1).
  const problems = new Set<string>();
  const found = new Set<string>();
  const code = new Map(
    sourceFiles().map((file) => [
      relative(repo, file),
      transformSync(readFileSync(file, 'utf8'), { loader: 'ts', legalComments: 'none' }).code,
    ]),
  );
  const defined = new Set(
    [...code.values()].flatMap((c) =>
      [...c.matchAll(/function\s+([A-Za-z]+-[A-Za-z0-9]+)/g)].map((m) => m[1]!.toLowerCase()),
    ),
  );
  for (const [file, text] of code) {
    // Capitalised as PowerShell's documentation and winfleet's scripts write commands
    // (kebab-case names such as read-config are not commands).
    for (const m of text.matchAll(
      /(?<![\w$.\-\\/])([A-Z][A-Za-z]*-[A-Z][A-Za-z0-9]*)(?![\w-]|\.ps)/g,
    )) {
      const name = m[1]!;
      if (!isCommandName(name) || defined.has(name.toLowerCase())) continue;
      found.add(name);
      for (const release of windowsServerReleases) {
        if (!commandModule(name, fullHost(release)))
          problems.add(`${file}: ${name} (Windows Server ${release})`);
      }
    }
  }
  assert.deepEqual([...problems], []);
  assert.ok(found.size >= 40, `found ${found.size} commands`);
});

test('a script calling New-HnsNetwork fails as PowerShell does on a host with only the built-in module', () => {
  const host = fullHost('2022');
  const old = [
    "if (-not (Get-Command -Name 'Get-HnsNetwork' -ErrorAction SilentlyContinue)) { exit 0 }",
    "$network = New-HnsNetwork -Type L2Bridge -Name 'winfleet' -AddressPrefix '10.244.1.0/24' -Gateway '10.244.1.1'",
  ].join('\n');
  assert.throws(
    () => assertCommandsExist(old, host),
    (error: unknown) =>
      error instanceof CommandNotFoundError &&
      error.command === 'New-HnsNetwork' &&
      error.message ===
        "New-HnsNetwork : The term 'New-HnsNetwork' is not recognized as the name of a cmdlet, function, script file, or operable program. Check the spelling of the name, or if a path was included, verify that the path is correct and try again.",
  );
  // Naming a command in a string or a comment is not calling it; case does not matter.
  assert.doesNotThrow(() =>
    assertCommandsExist(
      "Get-Command -Name 'New-HnsNetwork' # New-HnsNetwork\n<# Install-WindowsUpdate #>\nget-hnsnetwork",
      host,
    ),
  );
  // A comment's apostrophe does not open a string that hides the next line.
  assert.throws(() => assertCommandsExist("# don't\nInstall-WindowsUpdate -AcceptAll", host), {
    command: 'Install-WindowsUpdate',
  });
  // Here-strings are strings; a script's own function is a command.
  assert.doesNotThrow(() =>
    assertCommandsExist(
      "$s = @'\nNew-HnsNetwork\n'@\nfunction ConvertTo-WinfleetJson { }\nConvertTo-WinfleetJson",
      host,
    ),
  );
});

test('a module that comes with a feature is there only while the feature is installed', () => {
  const noContainers: PowerShellHost = {
    release: '2019',
    featureInstalled: (name) => name !== 'Containers',
  };
  assert.throws(() => assertCommandsExist('Get-HnsNetwork | Remove-HnsNetwork', noContainers), {
    command: 'Get-HnsNetwork',
  });
  assert.equal(commandModule('Get-HnsNetwork', fullHost('2019'))?.name, 'HostNetworkingService');
  assert.throws(
    () =>
      assertCommandsExist('Test-ADServiceAccount -Identity web', {
        release: '2025',
        featureInstalled: () => false,
      }),
    { command: 'Test-ADServiceAccount' },
  );
  // winfleet's HNS scripts check for Get-HnsNetwork first (which stands for its module, so
  // Remove-HnsNetwork after it is guarded too): they run on such a host.
  for (const script of [
    listHnsNetworksScript(),
    removeHnsNetworkScript('5f0ba94e-3f4b-4c0e-8c79-4e5b3c1d8b21'),
  ])
    assert.doesNotThrow(() => assertCommandsExist(script, noContainers));
});
