import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { decodePowerShellArgs, powerShellFlags } from '../../powershell/powershell.ts';
import { emptyState } from '../agent-state.ts';
import { agentServiceConfig, ensureService } from '../converge.ts';
import type { ServiceConfig } from '../host-os.ts';
import { splitServiceCommandLine } from './command-line.ts';
import type { CommandResult, CommandRunner } from './command-runner.ts';
import { windowsFixture } from './fixtures.ts';
import { isServiceControlError } from './sc-output.ts';
import { WindowsHostOS, type WindowsHostOSOptions } from './windows-host-os.ts';

const scExe = 'D:\\Win\\System32\\sc.exe';
const powerShellExe = 'D:\\Win\\System32\\WindowsPowerShell\\v1.0\\powershell.exe';
const shutdownExe = 'D:\\Win\\System32\\shutdown.exe';

/** One expected program run and what it answers. */
interface Step {
  file: string;
  /** The exact argv; for PowerShell, a check of the decoded script instead. */
  args?: string[];
  script?: (script: string) => void;
  result: CommandResult;
}

function sc(args: string[], fixture: string, exitCode = 0): Step {
  return { file: scExe, args, result: { exitCode, stdout: windowsFixture(fixture), stderr: '' } };
}

function ps(script: (script: string) => void, stdout: string, exitCode = 0, stderr = ''): Step {
  return { file: powerShellExe, script, result: { exitCode, stdout, stderr } };
}

/** A runner that replays `steps` in order, asserting each call, and parses every script. */
function scriptedHost(steps: Step[], options: WindowsHostOSOptions = {}) {
  const remaining = [...steps];
  const scripts: string[] = [];
  let clock = 0;
  const sleeps: number[] = [];
  const run: CommandRunner = async (file, args) => {
    const step = remaining.shift();
    assert.ok(step, `unexpected call: ${file} ${args.join(' ')}`);
    assert.equal(file, step.file);
    if (step.script) {
      assert.deepEqual(args.slice(0, -1), [...powerShellFlags, '-EncodedCommand']);
      const script = decodePowerShellArgs(args);
      assert.ok(script);
      scripts.push(script);
      step.script(script);
    } else {
      assert.deepEqual(args, step.args);
    }
    return step.result;
  };
  const host = new WindowsHostOS({
    run,
    systemRoot: 'D:\\Win',
    sleep: async (ms) => {
      sleeps.push(ms);
      clock += ms;
    },
    now: () => clock,
    ...options,
  });
  return {
    host,
    sleeps,
    async done() {
      assert.deepEqual(remaining, [], 'every expected command ran');
      for (const script of scripts) await assertValidPowerShell(script);
    },
  };
}

const kubelet: ServiceConfig = {
  name: 'kubelet',
  displayName: 'Kubernetes kubelet',
  description: 'winfleet: Kubernetes node agent',
  binaryPath: 'C:\\k\\kubelet.exe',
  args: ['--windows-service', '--config=C:\\k\\kubelet-config.yaml'],
  dependencies: ['containerd'],
  startType: 'auto',
  recovery: { restartDelaysMs: [5000, 5000], resetPeriodSeconds: 86400 },
};
const kubeletBinPath = '"C:\\k\\kubelet.exe" --windows-service --config=C:\\k\\kubelet-config.yaml';

test('queryService combines sc qc and sc queryex', async () => {
  const { host, done } = scriptedHost([
    sc(['qc', 'kubelet', '8192'], 'sc-qc-kubelet.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
  ]);
  const service = await host.queryService('kubelet');
  assert.ok(service);
  const { commandLine, ...rest } = service;
  assert.deepEqual(splitServiceCommandLine(commandLine).args.slice(0, 2), [
    '--windows-service',
    '--config=C:\\k\\kubelet-config.yaml',
  ]);
  assert.deepEqual(rest, {
    name: 'kubelet',
    state: 'running',
    pid: 4716,
    exitCode: 0,
    startType: 'auto',
    dependencies: ['containerd'],
    displayName: 'Kubernetes kubelet',
  });
  await done();
});

test('queryService of a missing service is undefined (sc qc 1060)', async () => {
  const { host, done } = scriptedHost([sc(['qc', 'nope', '8192'], 'sc-qc-1060.txt', 1060)]);
  assert.equal(await host.queryService('nope'), undefined);
  await done();
});

test('queryService reports a crashed service with its exit code and no PID', async () => {
  const { host, done } = scriptedHost([
    sc(['qc', 'kube-proxy', '8192'], 'sc-qc-kube-proxy.txt'),
    sc(['queryex', 'kube-proxy'], 'sc-queryex-kube-proxy-crashed.txt'),
  ]);
  const service = await host.queryService('kube-proxy');
  assert.equal(service?.state, 'stopped');
  assert.equal(service?.exitCode, 1067);
  assert.equal('pid' in (service ?? {}), false);
  assert.equal(service?.startType, 'delayed-auto');
  await done();
});

test('createService runs create, description, failure and failureflag', async () => {
  const { host, done } = scriptedHost([
    sc(
      [
        'create',
        'kubelet',
        'type=',
        'own',
        'binPath=',
        kubeletBinPath,
        'DisplayName=',
        'Kubernetes kubelet',
        'start=',
        'auto',
        'depend=',
        'containerd',
      ],
      'sc-create-success.txt',
    ),
    sc(['description', 'kubelet', 'winfleet: Kubernetes node agent'], 'sc-config2-success.txt'),
    sc(
      ['failure', 'kubelet', 'reset=', '86400', 'actions=', 'restart/5000/restart/5000'],
      'sc-config2-success.txt',
    ),
    sc(['failureflag', 'kubelet', '1'], 'sc-config2-success.txt'),
  ]);
  await host.createService(kubelet);
  await done();
});

// The agent's own service: winfleet-service.exe runs `winfleet-agent.exe run` (a Node program
// never calls the service dispatcher, so registered bare the SCM would kill it with 1053).
const agentBinPath =
  '"C:\\k\\winfleet\\winfleet-service.exe" --log-dir C:\\k\\winfleet\\logs -- C:\\k\\winfleet\\winfleet-agent.exe run';

test('the agent service is registered as winfleet-service.exe with the agent after "--"', async () => {
  const { host, done } = scriptedHost([
    sc(
      [
        'create',
        'winfleet-agent',
        'type=',
        'own',
        'binPath=',
        agentBinPath,
        'DisplayName=',
        'winfleet agent',
        'start=',
        'auto',
      ],
      'sc-create-success.txt',
    ),
    sc(
      [
        'description',
        'winfleet-agent',
        'Keeps the Kubernetes node services of this host configured and running (winfleet)',
      ],
      'sc-config2-success.txt',
    ),
    sc(
      [
        'failure',
        'winfleet-agent',
        'reset=',
        '86400',
        'actions=',
        'restart/5000/restart/5000/restart/10000',
      ],
      'sc-config2-success.txt',
    ),
    // Without it, an agent that exits non-zero (through the shim: service-specific error) would
    // not be restarted.
    sc(['failureflag', 'winfleet-agent', '1'], 'sc-config2-success.txt'),
  ]);
  await host.createService(agentServiceConfig());
  await done();
});

test('the registration sc qc reads back is the one the agent wants: no re-configuration', async () => {
  const { host, done } = scriptedHost([
    sc(['qc', 'winfleet-agent', '8192'], 'sc-qc-winfleet-agent.txt'),
    sc(['queryex', 'winfleet-agent'], 'sc-queryex-winfleet-agent-exited-3.txt'),
    ps(() => {}, windowsFixture('service-environment-none.json')),
  ]);
  const state = emptyState();
  assert.equal(await ensureService(host, agentServiceConfig(), state), false);
  assert.deepEqual(state.services, ['winfleet-agent']);
  await done();
});

test("queryService gives a service's own exit code when it reported one (1066)", async () => {
  const { host, done } = scriptedHost([
    sc(['qc', 'winfleet-agent', '8192'], 'sc-qc-winfleet-agent.txt'),
    sc(['queryex', 'winfleet-agent'], 'sc-queryex-winfleet-agent-exited-3.txt'),
  ]);
  const service = await host.queryService('winfleet-agent');
  assert.equal(service?.state, 'stopped');
  assert.equal(service?.exitCode, 3, 'the agent exit code the shim passed on, not 1066');
  assert.deepEqual(splitServiceCommandLine(service?.commandLine ?? ''), {
    binaryPath: 'C:\\k\\winfleet\\winfleet-service.exe',
    args: [
      '--log-dir',
      'C:\\k\\winfleet\\logs',
      '--',
      'C:\\k\\winfleet\\winfleet-agent.exe',
      'run',
    ],
  });
  await done();
});

test('createService of an existing service is an sc.exe failure with its Win32 error', async () => {
  const create = [
    'create',
    'kubelet',
    'type=',
    'own',
    'binPath=',
    kubeletBinPath,
    'DisplayName=',
    'Kubernetes kubelet',
    'start=',
    'auto',
    'depend=',
    'containerd',
  ];
  const { host, done } = scriptedHost([sc(create, 'sc-create-1073.txt', 1073)]);
  await assert.rejects(host.createService(kubelet), (err: unknown) => {
    assert.ok(isServiceControlError(err, 1073));
    assert.match(
      err.message,
      /^Cannot create service "kubelet": sc\.exe create kubelet .* failed with 1073: The specified service already exists; it already exists; configure it instead of creating it$/,
    );
    return true;
  });
  await done();
});

test('configureService updates the command line, clears dependencies and description', async () => {
  const config = {
    ...kubelet,
    dependencies: [],
    description: undefined,
    startType: 'delayed-auto' as const,
  };
  const { host, done } = scriptedHost([
    sc(
      [
        'config',
        'kubelet',
        'binPath=',
        kubeletBinPath,
        'DisplayName=',
        'Kubernetes kubelet',
        'start=',
        'delayed-auto',
        'depend=',
        '/',
      ],
      'sc-config-success.txt',
    ),
    sc(['description', 'kubelet', ''], 'sc-config2-success.txt'),
    sc(
      ['failure', 'kubelet', 'reset=', '86400', 'actions=', 'restart/5000/restart/5000'],
      'sc-config2-success.txt',
    ),
    sc(['failureflag', 'kubelet', '1'], 'sc-config2-success.txt'),
    // No environment in the config: the service's Environment value goes.
    ps(
      (script) =>
        assert.match(
          script,
          /\nRemove-ItemProperty -LiteralPath 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\kubelet' -Name 'Environment' -ErrorAction SilentlyContinue\n$/,
        ),
      '',
    ),
  ]);
  await host.configureService(config);
  await done();
});

test('a service environment is written as REG_MULTI_SZ after the service is created, and read back', async () => {
  const { host, done } = scriptedHost([
    sc(
      [
        'create',
        'kubelet',
        'type=',
        'own',
        'binPath=',
        kubeletBinPath,
        'DisplayName=',
        'Kubernetes kubelet',
        'start=',
        'auto',
        'depend=',
        'containerd',
      ],
      'sc-create-success.txt',
    ),
    sc(['description', 'kubelet', 'winfleet: Kubernetes node agent'], 'sc-config2-success.txt'),
    sc(
      ['failure', 'kubelet', 'reset=', '86400', 'actions=', 'restart/5000/restart/5000'],
      'sc-config2-success.txt',
    ),
    sc(['failureflag', 'kubelet', '1'], 'sc-config2-success.txt'),
    ps(
      (script) =>
        assert.match(
          script,
          /\nSet-ItemProperty -LiteralPath 'HKLM:\\SYSTEM\\CurrentControlSet\\Services\\kubelet' -Name 'Environment' -Type MultiString -Value \(\[string\[\]\] @\('HTTP_PROXY=http:\/\/proxy:3128', 'NO_PROXY=it''s,\.svc'\)\)\n$/,
        ),
      '',
    ),
    ps(
      (script) => assert.match(script, /Get-ItemProperty -LiteralPath \$key -Name 'Environment'/),
      windowsFixture('service-environment-set.json'),
    ),
    ps(() => {}, windowsFixture('service-environment-none.json')),
    ps(() => {}, windowsFixture('service-environment-missing.json')),
  ]);
  await host.createService({
    ...kubelet,
    environment: { NO_PROXY: "it's,.svc", HTTP_PROXY: 'http://proxy:3128' },
  });
  assert.deepEqual(await host.queryServiceEnvironment('kubelet'), {
    HTTP_PROXY: 'http://proxy.example:3128',
    NO_PROXY: '10.0.0.0/8,.svc',
    JAVA_OPTS: '-Da=b',
  });
  assert.deepEqual(await host.queryServiceEnvironment('kubelet'), {});
  assert.equal(await host.queryServiceEnvironment('kubelet'), undefined);
  await done();
});

test('a service environment Windows cannot hold is refused before sc.exe runs', async () => {
  const { host, done } = scriptedHost([]);
  await assert.rejects(
    host.createService({ ...kubelet, environment: { A: '1', a: '2' } }),
    /Cannot give service "kubelet" this environment: service "kubelet" env\.a: the same variable as "A" \(Windows environment names ignore case\); keep one/,
  );
  await assert.rejects(
    host.configureService({ ...kubelet, environment: { 'A=B': '1' } }),
    /service "kubelet" env\.A=B: not a Windows environment variable name; use 1 to 255 characters without "="/,
  );
  // The rules of a services manifest hold here too (one function checks both).
  await assert.rejects(
    host.createService({ ...kubelet, environment: { PATH: 'C:\\evil' } }),
    /service "kubelet" env\.PATH: this variable decides which programs Windows loads/,
  );
  await assert.rejects(
    host.createService({ ...kubelet, environment: { A: '' } }),
    /env\.A: the value must be 1 to 32767 characters without NUL; leave the variable out to unset it/,
  );
  await done();
});

test('startService: started, already running (1056) is fine, disabled (1058) is an error', async () => {
  const { host, done } = scriptedHost([
    sc(['start', 'kubelet'], 'sc-start-pending.txt'),
    sc(['start', 'kubelet'], 'sc-start-1056.txt', 1056),
    sc(['start', 'kubelet'], 'sc-start-1058.txt', 1058),
  ]);
  await host.startService('kubelet');
  await host.startService('kubelet');
  await assert.rejects(
    host.startService('kubelet'),
    /Cannot start service "kubelet": sc\.exe start kubelet failed with 1058: .*; its start type is disabled; configure another start type first/,
  );
  await done();
});

test('stopService sends stop and polls until STOPPED', async () => {
  const { host, sleeps, done } = scriptedHost([
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
    sc(['stop', 'kubelet'], 'sc-stop-pending.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-stop-pending.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
  ]);
  await host.stopService('kubelet');
  assert.deepEqual(sleeps, [500, 500]);
  await done();
});

test('stopService of a stopped or missing service does nothing more', async () => {
  const { host, done } = scriptedHost([
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
    sc(['queryex', 'nope'], 'sc-query-1060.txt', 1060),
  ]);
  await host.stopService('kubelet');
  await host.stopService('nope');
  await done();
});

test('stopService waits for a starting service, then stops it; 1061 and 1062 are retried', async () => {
  const { host, done } = scriptedHost([
    sc(['queryex', 'kubelet'], 'sc-start-pending.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
    sc(['stop', 'kubelet'], 'sc-stop-1061.txt', 1061),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
    sc(['stop', 'kubelet'], 'sc-stop-1062.txt', 1062),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
  ]);
  await host.stopService('kubelet');
  await done();
});

test('stopService gives up after its timeout, naming the state and PID', async () => {
  const steps = [
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
    sc(['stop', 'kubelet'], 'sc-stop-pending.txt'),
  ];
  // Polls at 500, 1000 and 1500 ms; the deadline is then reached.
  for (let i = 0; i < 3; i++) steps.push(sc(['queryex', 'kubelet'], 'sc-queryex-stop-pending.txt'));
  const { host, done } = scriptedHost(steps, { stopTimeoutMs: 1500 });
  await assert.rejects(host.stopService('kubelet'), {
    code: 'WF_SERVICE_STUCK',
    message:
      /^Service "kubelet" did not stop within 1500 ms \(still stop-pending, PID 4716\); end its process \(taskkill \/F \/PID 4716\) or reboot the host$/,
  });
  await done();
});

test('stopService fails clearly when other running services depend on it (1051)', async () => {
  const { host, done } = scriptedHost([
    sc(['queryex', 'containerd'], 'sc-query-running.txt'),
    sc(['stop', 'containerd'], 'sc-stop-1051.txt', 1051),
  ]);
  await assert.rejects(
    host.stopService('containerd'),
    /failed with 1051: .*; stop the services that depend on it first$/,
  );
  await done();
});

test('deleteService stops, deletes and waits until the service is gone', async () => {
  const { host, done } = scriptedHost([
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-running.txt'),
    sc(['stop', 'kubelet'], 'sc-stop-pending.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
    sc(['delete', 'kubelet'], 'sc-delete-success.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
    sc(['queryex', 'kubelet'], 'sc-query-1060.txt', 1060),
  ]);
  await host.deleteService('kubelet');
  await done();
});

test('deleteService of a missing service is not an error', async () => {
  const { host, done } = scriptedHost([sc(['queryex', 'nope'], 'sc-query-1060.txt', 1060)]);
  await host.deleteService('nope');
  await done();
});

test('deleteServiceWhenStopped only marks the service (a running one goes once it stops)', async () => {
  const { host, done } = scriptedHost([
    sc(['delete', 'winfleet-agent'], 'sc-delete-success.txt'),
    sc(['delete', 'winfleet-agent'], 'sc-delete-1072.txt', 1072),
    sc(['delete', 'nope'], 'sc-qc-1060.txt', 1060),
  ]);
  await host.deleteServiceWhenStopped('winfleet-agent');
  await host.deleteServiceWhenStopped('winfleet-agent');
  await host.deleteServiceWhenStopped('nope');
  await done();
});

test('deleteService reports a deletion held up by an open handle', async () => {
  const steps = [
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
    sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'),
    sc(['delete', 'kubelet'], 'sc-delete-1072.txt', 1072),
  ];
  for (let i = 0; i < 3; i++)
    steps.push(sc(['queryex', 'kubelet'], 'sc-queryex-kubelet-stopped.txt'));
  const { host, done } = scriptedHost(steps, { deleteTimeoutMs: 1000 });
  await assert.rejects(host.deleteService('kubelet'), {
    code: 'WF_SERVICE_STUCK',
    message:
      /^Service "kubelet" is marked for deletion but still registered after 1000 ms; close programs that hold it open \(services\.msc, Event Viewer\) or reboot the host$/,
  });
  await done();
});

test('sc.exe access denied names the fix', async () => {
  const { host, done } = scriptedHost([
    sc(['qc', 'kubelet', '8192'], 'sc-open-scmanager-5.txt', 5),
  ]);
  await assert.rejects(host.queryService('kubelet'), {
    code: 'WF_SERVICE_CONTROL',
    message:
      /^Cannot query service "kubelet": sc\.exe qc kubelet 8192 failed with 5: Access is denied; run the agent as LocalSystem or an administrator$/,
  });
  await done();
});

test('machine environment variables go through [Environment] in the Machine scope', async () => {
  const { host, done } = scriptedHost([
    ps(
      (s) => assert.match(s, /GetEnvironmentVariable\('Path', 'Machine'\)/),
      windowsFixture('machine-env-set.json'),
    ),
    ps(
      (s) => assert.match(s, /GetEnvironmentVariable\('NO_PROXY', 'Machine'\)/),
      windowsFixture('machine-env-unset.json'),
    ),
    ps(
      (s) =>
        assert.match(
          s,
          /SetEnvironmentVariable\('NO_PROXY', '\.svc,\.cluster\.local', 'Machine'\)/,
        ),
      '',
    ),
    ps((s) => assert.match(s, /SetEnvironmentVariable\('NO_PROXY', \$null, 'Machine'\)/), ''),
  ]);
  assert.equal(await host.getMachineEnv('Path'), 'C:\\Windows\\system32;C:\\Windows;C:\\k');
  assert.equal(await host.getMachineEnv('NO_PROXY'), undefined);
  await host.setMachineEnv('NO_PROXY', '.svc,.cluster.local');
  await host.setMachineEnv('NO_PROXY', undefined);
  await done();
});

test("a failing script reports PowerShell's error text", async () => {
  const stderr =
    '#< CLIXML\r\n<Objs Version="1.1.0.1" xmlns="http://schemas.microsoft.com/powershell/2004/04">' +
    '<S S="Error">Exception calling "SetEnvironmentVariable" with "3" argument(s): "Requested registry access is not allowed."_x000D__x000A_</S></Objs>';
  const { host, done } = scriptedHost([ps(() => {}, '', 1, stderr)]);
  await assert.rejects(host.setMachineEnv('A', 'b'), {
    code: 'WF_WINDOWS_COMMAND_FAILED',
    message:
      /^Cannot set environment variable "A": PowerShell exited with 1: Exception calling "SetEnvironmentVariable" with "3" argument\(s\): "Requested registry access is not allowed\."$/,
  });
  await done();
});

test('HNS networks: listed, removed, and unavailable reported as such', async () => {
  const id = '5F0BA94E-3F4B-4C0E-8C79-4E5B3C1D8B21';
  const { host, done } = scriptedHost(
    [
      ps(
        (s) => assert.match(s, /foreach \(\$path in @\('C:\\k\\winfleet\\hns\.psm1'\)\)/),
        windowsFixture('hns-list-available.json'),
      ),
      ps((s) => assert.match(s, new RegExp(`-eq '${id}'`)), windowsFixture('hns-remove-one.json')),
      ps(() => {}, windowsFixture('hns-list-unavailable.json')),
      ps(() => {}, windowsFixture('hns-list-unavailable.json')),
    ],
    { hnsModulePaths: ['C:\\k\\winfleet\\hns.psm1'] },
  );
  const networks = await host.listHnsNetworks();
  assert.deepEqual(
    networks.map((n) => `${n.name}/${n.type}`),
    ['nat/nat', 'cbr0/L2Bridge'],
  );
  await host.removeHnsNetwork(id);
  await assert.rejects(host.listHnsNetworks(), {
    code: 'WF_HNS_UNAVAILABLE',
    message: /^Cannot list HNS networks: Get-HnsNetwork is not available/,
  });
  await assert.rejects(host.removeHnsNetwork(id), {
    code: 'WF_HNS_UNAVAILABLE',
    message: /^Cannot remove HNS network "5F0BA94E-/,
  });
  await done();
});

test('osVersion reads the registry; hostname comes from the OS', async () => {
  const { host, done } = scriptedHost(
    [
      ps(
        (s) => assert.match(s, /CurrentVersion'/),
        windowsFixture('registry-currentversion-2022.json'),
      ),
    ],
    { hostname: () => 'WIN-2022-A' },
  );
  assert.deepEqual(await host.osVersion(), {
    major: 10,
    minor: 0,
    build: 20348,
    ubr: 2582,
    productName: 'Windows Server 2022 Datacenter',
  });
  assert.equal(await host.hostname(), 'WIN-2022-A');
  await done();
});

test('ipv4Network reads every address and the default routes, one row or many', async () => {
  const { host, done } = scriptedHost([
    ps((s) => {
      assert.match(s, /Get-NetIPAddress -AddressFamily IPv4/);
      assert.match(s, /Get-NetRoute -AddressFamily IPv4 -DestinationPrefix '0.0.0.0\/0'/);
    }, windowsFixture('ipv4-network-2022.json')),
    ps(() => {}, windowsFixture('ipv4-network-one-address.json')),
  ]);
  const network = await host.ipv4Network();
  assert.deepEqual(
    network.ipAddresses.map((a) => `${a.address} ${a.interfaceAlias}`),
    [
      '172.24.160.1 vEthernet (nat)',
      '169.254.83.107 Ethernet 2',
      '10.0.1.23 Ethernet',
      '127.0.0.1 Loopback Pseudo-Interface 1',
    ],
  );
  assert.deepEqual(network.defaultRoutes, [
    { interfaceIndex: 4, routeMetric: 0, interfaceMetric: 15 },
  ]);
  const one = await host.ipv4Network();
  assert.equal(one.ipAddresses.length, 1);
  assert.deepEqual(one.defaultRoutes, []);
  await done();
});

test('reboot schedules shutdown.exe /r in 5 s as planned maintenance', async () => {
  const args = (comment: string) => ['/r', '/t', '5', '/d', 'p:4:1', '/c', comment];
  const { host, done } = scriptedHost([
    {
      file: shutdownExe,
      args: args('winfleet: Containers feature installed'),
      result: { exitCode: 0, stdout: '', stderr: '' },
    },
    {
      file: shutdownExe,
      args: args("quotes 'removed' and new lines"),
      result: {
        exitCode: 1190,
        stdout: '',
        stderr: 'A system shutdown has already been scheduled.(1190)\r\n',
      },
    },
    {
      file: shutdownExe,
      args: args('x'.repeat(512)),
      result: { exitCode: 5, stdout: '', stderr: 'Access is denied.(5)\r\n' },
    },
  ]);
  await host.reboot('winfleet: Containers feature installed');
  await host.reboot('quotes "removed"\nand new lines');
  await assert.rejects(host.reboot('x'.repeat(600)), {
    code: 'WF_WINDOWS_COMMAND_FAILED',
    message:
      /^Cannot reboot: shutdown\.exe \/r \/t 5 \/d p:4:1 \/c x+ exited with 5: Access is denied\.\(5\); run the agent as LocalSystem or an administrator$/,
  });
  await done();
});

test('uses %SystemRoot% for the programs it runs', async () => {
  const calls: string[] = [];
  const host = new WindowsHostOS({
    run: async (file) => {
      calls.push(file);
      return { exitCode: 1060, stdout: windowsFixture('sc-qc-1060.txt'), stderr: '' };
    },
    systemRoot: 'C:\\Windows',
  });
  await host.queryService('kubelet');
  assert.deepEqual(calls, ['C:\\Windows\\System32\\sc.exe']);
});

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'winfleet-hostos-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('files: atomic write with parents, read, list, remove', async () => {
  const host = new WindowsHostOS({ run: async () => assert.fail('no program runs for files') });
  const config = join(dir, 'k', 'config', 'kubelet-config.yaml');
  assert.equal(await host.readFile(config), undefined);
  assert.equal(await host.listDirectory(join(dir, 'k')), undefined);

  await host.writeFile(config, 'kind: KubeletConfiguration\n');
  await host.writeFile(config, Buffer.from('kind: KubeletConfiguration\nport: 10250\n'));
  assert.equal(
    (await host.readFile(config))?.toString(),
    'kind: KubeletConfiguration\nport: 10250\n',
  );
  assert.deepEqual(
    await readdir(join(dir, 'k', 'config')),
    ['kubelet-config.yaml'],
    'no temporary file is left',
  );

  await host.ensureDirectory(join(dir, 'k', 'cni', 'config'));
  await host.ensureDirectory(join(dir, 'k', 'cni', 'config'));
  await host.writeFile(join(dir, 'k', 'b.txt'), '');
  assert.deepEqual(await host.listDirectory(join(dir, 'k')), ['b.txt', 'cni', 'config']);

  await host.removePath(join(dir, 'k', 'config'));
  await host.removePath(join(dir, 'k', 'config'));
  await host.removePath(join(dir, 'k', 'b.txt'));
  assert.deepEqual(await host.listDirectory(join(dir, 'k')), ['cni']);
});

test('files: rename refuses an existing target; removeFileIfUnused removes once, missing is fine', async () => {
  const host = new WindowsHostOS({ run: async () => assert.fail('no program runs for files') });
  const from = join(dir, 'shim.exe');
  await host.writeFile(from, 'v1');
  await host.writeFile(join(dir, 'taken'), 'x');
  await assert.rejects(
    host.renamePath(from, join(dir, 'taken')),
    /Cannot rename ".*shim\.exe" to ".*taken": ".*taken" already exists/,
  );
  await host.renamePath(from, `${from}.old-1`);
  assert.equal((await host.readFile(`${from}.old-1`))?.toString(), 'v1');
  assert.equal(await host.readFile(from), undefined);
  assert.equal(await host.removeFileIfUnused(`${from}.old-1`), true);
  assert.equal(await host.removeFileIfUnused(`${from}.old-1`), true, 'missing: gone already');
  assert.equal(await host.readFile(`${from}.old-1`), undefined);
  await host.removePath(join(dir, 'taken'));
});

test('files: a failed replace leaves no temporary file behind', async () => {
  const host = new WindowsHostOS({ run: async () => assert.fail('no program runs for files') });
  const target = join(dir, 'busy');
  await host.ensureDirectory(join(target, 'child'));
  await assert.rejects(host.writeFile(target, 'x'));
  assert.deepEqual(
    await readdir(dir).then((names) => names.filter((n) => n.startsWith('busy.'))),
    [],
  );
  await writeFile(join(dir, 'plain'), 'x');
  await assert.rejects(host.readFile(dir), /EISDIR/);
  assert.equal((await readFile(join(dir, 'plain'))).toString(), 'x');
});

/** Chunks of `parts`, then (when `failure`) an error, as a blob that fails its check does. */
async function* chunksOf(parts: string[], failure?: Error): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part);
  if (failure) throw failure;
}

test('files: a stream is written in place only when it ends cleanly; hash and copy stream too', async () => {
  const host = new WindowsHostOS({ run: async () => assert.fail('no program runs for files') });
  const target = join(dir, 'payload', 'kubelet.exe');
  const temporaries = async () =>
    (await readdir(join(dir, 'payload'))).filter((n) => n.endsWith('.tmp'));
  assert.equal(await host.writeFileFromStream(target, chunksOf(['kube', 'let'])), 7);
  assert.equal((await readFile(target)).toString(), 'kubelet');
  assert.equal(await host.fileSha256(target), createHash('sha256').update('kubelet').digest('hex'));
  assert.equal(await host.fileSha256(join(dir, 'payload', 'missing.exe')), undefined);

  // A stream that fails at its end (a digest mismatch) leaves the old file and no temporary.
  await assert.rejects(
    host.writeFileFromStream(target, chunksOf(['tampered'], new Error('digest mismatch'))),
    /digest mismatch/,
  );
  assert.equal((await readFile(target)).toString(), 'kubelet');
  assert.deepEqual(await temporaries(), []);
  const fresh = join(dir, 'payload', 'new.exe');
  await assert.rejects(host.writeFileFromStream(fresh, chunksOf(['x'], new Error('cut'))));
  assert.equal(await host.readFile(fresh), undefined, 'nothing under the name');

  const copy = join(dir, 'k', 'copied', 'kubelet.exe');
  await host.copyFile(target, copy);
  assert.equal((await readFile(copy)).toString(), 'kubelet');
  await assert.rejects(host.copyFile(join(dir, 'payload', 'missing.exe'), copy), /ENOENT/);
  assert.equal((await readFile(copy)).toString(), 'kubelet', 'a failed copy changes nothing');
  assert.deepEqual(
    (await readdir(join(dir, 'k', 'copied'))).filter((n) => n.endsWith('.tmp')),
    [],
  );
  await host.removePath(join(dir, 'payload'));
  await host.removePath(join(dir, 'k', 'copied'));
});

test('freeDiskBytes reads the volume of the nearest existing directory', async () => {
  const host = new WindowsHostOS({
    run: async () => assert.fail('no program runs for disk space'),
  });
  const stats = await statfs(dir);
  const expected = Number(stats.bavail) * Number(stats.bsize);
  const free = await host.freeDiskBytes(dir);
  const freeMissing = await host.freeDiskBytes(join(dir, 'not', 'yet', 'created'));
  // Other processes write meanwhile: equal within 64 MiB.
  assert.ok(Math.abs(free - expected) < 64 * 1024 * 1024, `${free} vs ${expected}`);
  assert.ok(Math.abs(freeMissing - expected) < 64 * 1024 * 1024);
});

// sc.exe's answers for the Windows Time service, in the format of the recorded fixtures (not
// recorded on a host: W32Time shares svchost.exe and is a demand, trigger-start service on a
// standalone server).
const w32timeQc = [
  '[SC] QueryServiceConfig SUCCESS',
  '',
  'SERVICE_NAME: W32Time',
  '        TYPE               : 20  WIN32_SHARE_PROCESS ',
  '        START_TYPE         : 3   DEMAND_START',
  '        ERROR_CONTROL      : 1   NORMAL',
  '        BINARY_PATH_NAME   : C:\\Windows\\system32\\svchost.exe -k LocalService',
  '        LOAD_ORDER_GROUP   : ',
  '        TAG                : 0',
  '        DISPLAY_NAME       : Windows Time',
  '        DEPENDENCIES       : ',
  '        SERVICE_START_NAME : NT AUTHORITY\\LocalService',
  '',
].join('\r\n');
const w32timeQueryex = (state: string) =>
  [
    '',
    'SERVICE_NAME: W32Time ',
    '        TYPE               : 20  WIN32_SHARE_PROCESS  ',
    `        STATE              : ${state} `,
    '        WIN32_EXIT_CODE    : 0  (0x0)',
    '        SERVICE_EXIT_CODE  : 0  (0x0)',
    '        CHECKPOINT         : 0x0',
    '        WAIT_HINT          : 0x0',
    `        PID                : ${state.includes('RUNNING') ? '1288' : '0'}`,
    '        FLAGS              : ',
    '',
  ].join('\r\n');
const w32tmExe = 'D:\\Win\\System32\\w32tm.exe';

test('resyncClock starts a stopped W32Time, waits for RUNNING (its RPC endpoint), then runs w32tm /resync /force', async () => {
  const text = (stdout: string) => ({ exitCode: 0, stdout, stderr: '' });
  const running = w32timeQueryex(
    '4  RUNNING\r\n                                (STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)',
  );
  const { host, done, sleeps } = scriptedHost([
    { file: scExe, args: ['qc', 'W32Time', '8192'], result: text(w32timeQc) },
    { file: scExe, args: ['queryex', 'W32Time'], result: text(w32timeQueryex('1  STOPPED')) },
    sc(['start', 'W32Time'], 'sc-start-pending.txt'),
    // sc start returned at START_PENDING: w32tm would find no RPC server yet.
    {
      file: scExe,
      args: ['queryex', 'W32Time'],
      result: text(w32timeQueryex('2  START_PENDING')),
    },
    { file: scExe, args: ['queryex', 'W32Time'], result: text(running) },
    {
      file: w32tmExe,
      args: ['/resync', '/force'],
      result: text(
        'Sending resync command to local computer\r\nThe command completed successfully.\r\n',
      ),
    },
    { file: scExe, args: ['qc', 'W32Time', '8192'], result: text(w32timeQc) },
    {
      file: scExe,
      args: ['queryex', 'W32Time'],
      result: text(
        w32timeQueryex(
          '4  RUNNING\r\n                                (STOPPABLE, NOT_PAUSABLE, ACCEPTS_SHUTDOWN)',
        ),
      ),
    },
    {
      file: w32tmExe,
      args: ['/resync', '/force'],
      result: {
        exitCode: -2147023436,
        stdout:
          'Sending resync command to local computer\r\nThe computer did not resync because no time data was available.\r\n',
        stderr: '',
      },
    },
    sc(['qc', 'W32Time', '8192'], 'sc-qc-1060.txt', 1060),
  ]);
  await host.resyncClock();
  await assert.rejects(host.resyncClock(), {
    code: 'WF_WINDOWS_COMMAND_FAILED',
    message:
      /^Cannot resync the clock: w32tm\.exe \/resync \/force exited with -2147023436: Sending resync command to local computer The computer did not resync because no time data was available\.; check the time source/,
  });
  await assert.rejects(
    host.resyncClock(),
    /W32Time\) is not installed; register it with w32tm \/register/,
  );
  assert.deepEqual(sleeps, [500], 'one poll while W32Time was START_PENDING');
  assert.equal(await host.localTime(), 500, 'the agent’s own clock is the host’s');
  await done();
});

test('createHnsNetwork creates the L2Bridge network through HcnCreateNetwork unless it exists (never New-HnsNetwork, which the built-in module lacks), and refuses odd input', async () => {
  const id = 'C3B1A9E8-7D64-4F25-8A1B-0E9D2C3F4A56';
  const spec = {
    name: 'winfleet',
    type: 'L2Bridge' as const,
    addressPrefix: '10.244.1.0/24',
    gateway: '10.244.1.1',
  };
  const { host, done } = scriptedHost([
    ps(
      (s) => {
        assert.doesNotMatch(s, /New-HnsNetwork/);
        assert.match(
          s,
          /\[WinfleetHcn\]::HcnCreateNetwork\(\[ref\]\$id, '\{"SchemaVersion":\{"Major":2,"Minor":0\},"Name":"winfleet","Type":"L2Bridge","Ipams":\[\{"Type":"Static","Subnets":\[\{"IpAddressPrefix":"10\.244\.1\.0\/24","Routes":\[\{"NextHop":"10\.244\.1\.1","DestinationPrefix":"0\.0\.0\.0\/0"\}\]\}\]\}\]\}'/,
        );
      },
      JSON.stringify({
        available: true,
        created: true,
        network: { Id: id, Name: 'winfleet', Type: 'L2Bridge' },
      }),
    ),
    ps(() => {}, windowsFixture('hns-list-unavailable.json')),
  ]);
  assert.deepEqual(await host.createHnsNetwork(spec), { id, name: 'winfleet', type: 'L2Bridge' });
  await assert.rejects(host.createHnsNetwork(spec), {
    code: 'WF_HNS_UNAVAILABLE',
    message: /^Cannot create HNS network "winfleet": Get-HnsNetwork is not available/,
  });
  for (const bad of [
    { ...spec, name: "winfleet'; Remove-HnsNetwork" },
    { ...spec, type: 'Transparent' as never },
    { ...spec, addressPrefix: '10.244.1.5/24' },
    { ...spec, addressPrefix: 'fd00::/64' },
    { ...spec, gateway: '10.244.2.1' },
    { ...spec, gateway: '10.244.1.0' },
    { ...spec, gateway: '10.244.1.255' },
  ]) {
    await assert.rejects(host.createHnsNetwork(bad), { code: 'WF_INVARIANT' }, JSON.stringify(bad));
  }
  await done();
});

test('serviceFailures reads the System log through PowerShell', async () => {
  const { host, done } = scriptedHost([
    ps((s) => assert.match(s, /Id = 7031, 7034/), '{"ok":true,"times":[20,10]}'),
    ps(() => {}, '{"ok":false,"message":"service nope does not exist"}'),
  ]);
  assert.deepEqual(await host.serviceFailures('kubelet', 5), [10, 20]);
  await assert.rejects(host.serviceFailures('nope', 5), /service nope does not exist/);
  await done();
});

test('updates: an .msu wusa.exe cannot extract, or one without a .cab, is WF_WINDOWS_UPDATE_FAILED; its scratch directory goes', async () => {
  const payloadDir = join(dir, 'msu', 'payload');
  const programs: string[] = [];
  let wusaExitCode = -2145124329; // 0x80240017 WU_E_NOT_APPLICABLE
  const host = new WindowsHostOS({
    payloadDir,
    systemRoot: 'C:\\Windows',
    run: async (program) => {
      programs.push(program);
      return { exitCode: wusaExitCode, stdout: '', stderr: '' };
    },
  });
  await host.ensureDirectory(payloadDir);
  const msu = { kb: 'KB5040437', name: 'windows10.0-kb5040437-x64.msu' };
  await assert.rejects(host.installMsu(msu), {
    code: 'WF_WINDOWS_UPDATE_FAILED',
    message: /^wusa\.exe .*windows10\.0-kb5040437-x64\.msu .* failed with 0x80240017/,
  });
  // Extracted, but nothing to install: never reported as installed.
  wusaExitCode = 0;
  await assert.rejects(host.installMsu(msu), {
    code: 'WF_WINDOWS_UPDATE_FAILED',
    message: /windows10\.0-kb5040437-x64\.msu holds no update \.cab file/,
  });
  assert.deepEqual(programs, [
    'C:\\Windows\\System32\\wusa.exe',
    'C:\\Windows\\System32\\wusa.exe',
  ]);
  assert.equal(await host.listDirectory(join(dir, 'msu', 'msu-KB5040437')), undefined);
});

test('files: a file that stays in use is WF_FILE_IN_USE after the retries, and is left as it was', async (t) => {
  // An immutable file refuses to be replaced with EPERM, even for root: what Windows answers
  // for a running executable (ERROR_ACCESS_DENIED, mapped to EPERM by libuv).
  const target = join(dir, 'in-use.exe');
  await writeFile(target, 'running');
  const chattr = (flag: string) => spawnSync('chattr', [flag, target], { encoding: 'utf8' });
  if (chattr('+i').status !== 0) {
    t.skip('chattr +i is not available here (needs root and a file system with attributes)');
    return;
  }
  t.after(() => chattr('-i'));
  const sleeps: number[] = [];
  const host = new WindowsHostOS({
    run: async () => assert.fail('no program runs for files'),
    renameAttempts: 3,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  await assert.rejects(host.writeFile(target, 'replacement'), {
    code: 'WF_FILE_IN_USE',
    message: /^Cannot replace ".*in-use\.exe": it is in use \(EPERM\); stop the service/,
  });
  assert.deepEqual(sleeps, [100, 200], 'retried with a growing pause');
  assert.equal((await readFile(target)).toString(), 'running');
  assert.deepEqual(
    (await readdir(dir)).filter((n) => n.startsWith('in-use.exe.')),
    [],
    'no temporary file left',
  );
});
