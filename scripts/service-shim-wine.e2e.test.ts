/**
 * winfleet-service.exe under a real service control manager: Wine's (Debian wine64 8.0). The
 * agent's service is registered with the exact sc.exe arguments the Windows HostOS runs
 * (scCreateArgs(agentServiceConfig())), so the Windows build of the shim parses the command
 * line TypeScript quoted, calls the service dispatcher, reports RUNNING, and on `sc stop`
 * closes its child's standard input, waits for it and reports STOPPED. The child is a stand-in
 * (windows/service/internal/standin) in winfleet-agent.exe's place: Node 24's Windows binary
 * does not start under Wine 8 (V8: "Fatal process out of memory: SegmentedTable::
 * InitializeTable").
 *
 * What Wine cannot show: the recovery actions (Wine 8's services.exe accepts `sc failure` but
 * never restarts a service); the exit status they act on is checked here, the restart itself in
 * the simulated SCM (sim/hosts/service-control-manager.test.ts). Needs wine64
 * (hack/ensure-packages.sh installs it); without it the test is skipped with a warning.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { agentServiceConfig } from '../src/agent/converge.ts';
import { scCreateArgs } from '../src/agent/windows/sc-commands.ts';
import { parseScStatus } from '../src/agent/windows/sc-output.ts';
import { waitFor } from '../src/kube/wait-for.ts';
import { hostPaths } from '../src/servicesmanifest/host-paths.ts';
import { buildServiceShim, goBuildForWindows } from './build-service-shim.ts';
import { createWinePrefix, hasWine, runWine } from './wine-prefix.ts';

const wineMissing = !(await hasWine());
if (wineMissing) {
  process.stderr.write(
    '\nWARNING: wine64 is not installed, so winfleet-service.exe is NOT tested under a Windows service manager.\n' +
      '         Install it (make packages, or apt-get install --no-install-recommends wine64) to run scripts/service-shim-wine.e2e.test.ts.\n\n',
  );
}

/** Where a C:\ path of the prefix is on this machine. */
const onDisk = (prefix: string, windowsPath: string) =>
  join(prefix, 'drive_c', ...windowsPath.replace(/^C:\\/i, '').split('\\'));

/** Linux pids of this prefix's Wine processes whose command line starts with `commandLine`. */
async function winePids(prefix: string, commandLine: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [cmdline, environ] = await Promise.all(
      ['cmdline', 'environ'].map((f) => readFile(`/proc/${entry}/${f}`, 'latin1').catch(() => '')),
    );
    const args = cmdline!.split('\0').join(' ').trim();
    if (args.startsWith(commandLine) && environ!.split('\0').includes(`WINEPREFIX=${prefix}`))
      pids.push(Number(entry));
  }
  return pids;
}

describe('winfleet-service.exe under Wine’s service manager', {
  skip: wineMissing ? 'wine64 is not installed (see the warning above)' : false,
  timeout: 10 * 60_000,
}, () => {
  let prefix: string;
  let remove: () => Promise<void>;
  const log = () => readFile(onDisk(prefix, `${hostPaths.agentLogs}\\winfleet-agent.log`), 'utf8');
  const sc = async (...args: string[]) => runWine(prefix, ['sc.exe', ...args]);
  const status = async (name: string) => {
    const result = await sc('query', name);
    assert.equal(result.code, 0, `sc query ${name}: ${result.stdout}${result.stderr}`);
    return parseScStatus(result.stdout);
  };

  before(async () => {
    ({ prefix, remove } = await createWinePrefix());
    const dir = onDisk(prefix, hostPaths.agentExe.slice(0, hostPaths.agentExe.lastIndexOf('\\')));
    await mkdir(dir, { recursive: true });
    const built = join(prefix, '..', 'build');
    await copyFile(await buildServiceShim({ outDir: built }), onDisk(prefix, hostPaths.serviceExe));
    await copyFile(
      await goBuildForWindows('./internal/standin', 'standin.exe', { outDir: built }),
      onDisk(prefix, hostPaths.agentExe),
    );
  });
  after(() => remove?.());

  test('the agent registered bare never reaches the dispatcher: 1053, the bug the shim fixes', async () => {
    const bare = {
      ...agentServiceConfig(),
      name: 'winfleet-bare',
      displayName: 'winfleet bare',
      binaryPath: hostPaths.agentExe,
      args: ['run'],
    };
    const created = await sc(...scCreateArgs(bare));
    assert.equal(created.code, 0, `sc create: ${created.stdout}${created.stderr}`);
    // Wine's SCM waits 10 s for the dispatcher (Windows: 30 s).
    const started = await runWine(prefix, ['sc.exe', 'start', 'winfleet-bare'], {
      debug: 'err+sc',
    });
    assert.equal(started.code, 1, `sc start: ${started.stdout}${started.stderr}`);
    assert.match(started.stderr, /err:sc:wmain failed to start service 1053$/m);
    await waitFor(
      async () => (await winePids(prefix, 'C:\\k\\winfleet\\winfleet-agent.exe')).length === 0,
      {
        description: 'the bare agent to be gone',
        timeoutMs: 30_000,
        intervalMs: 200,
      },
    );
  });

  test('sc create with the Windows HostOS arguments, sc start: RUNNING, with the agent as its child', async () => {
    const created = await sc(...scCreateArgs(agentServiceConfig()));
    assert.equal(created.code, 0, `sc create: ${created.stdout}${created.stderr}`);
    const started = await sc('start', 'winfleet-agent');
    assert.equal(started.code, 0, `sc start: ${started.stdout}${started.stderr}`);
    await waitFor(async () => (await status('winfleet-agent')).state === 'running', {
      description: 'winfleet-agent to be RUNNING',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    await waitFor(async () => (await log()).includes('standin: started'), {
      description: 'the stand-in agent to start',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    const text = await log();
    assert.match(
      text,
      /^\S+Z winfleet-service: started C:\\k\\winfleet\\winfleet-agent\.exe run \(pid \d+\)$/m,
    );
    assert.match(text, /standin: started with \["run"\], WINFLEET_STOP_ON_STDIN_EOF="1"$/m);
    assert.equal(
      (await winePids(prefix, 'C:\\k\\winfleet\\winfleet-service.exe --log-dir')).length,
      1,
    );
    assert.equal((await winePids(prefix, 'C:\\k\\winfleet\\winfleet-agent.exe run')).length, 1);
  });

  test('sc stop: the agent is asked to stop through its standard input; both end', async () => {
    const stopped = await sc('stop', 'winfleet-agent');
    assert.equal(stopped.code, 0, `sc stop: ${stopped.stdout}${stopped.stderr}`);
    await waitFor(async () => (await status('winfleet-agent')).state === 'stopped', {
      description: 'winfleet-agent to be STOPPED',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    await waitFor(
      async () =>
        (await winePids(prefix, 'C:\\k\\winfleet\\winfleet-service.exe')).length === 0 &&
        (await winePids(prefix, 'C:\\k\\winfleet\\winfleet-agent.exe')).length === 0,
      { description: 'both processes to end', timeoutMs: 30_000, intervalMs: 200 },
    );
    assert.equal((await status('winfleet-agent')).win32ExitCode, 0);
    const text = await log();
    assert.match(text, /winfleet-service: stop requested: closed the standard input of /);
    assert.match(text, /standin: standard input closed, exiting$/m);
    assert.match(
      text,
      /winfleet-service: C:\\k\\winfleet\\winfleet-agent\.exe stopped with code 0$/m,
    );
  });

  test('a wrong command line still reaches the dispatcher: the start succeeds and the service stops', async () => {
    const config = {
      ...agentServiceConfig(),
      name: 'winfleet-bad',
      displayName: 'winfleet bad', // display names are unique too (1078)
      args: ['--log-dir', hostPaths.agentLogs, '--log-level', 'debug', '--', hostPaths.agentExe],
    };
    const created = await sc(...scCreateArgs(config));
    assert.equal(created.code, 0, `sc create: ${created.stdout}${created.stderr}`);
    const started = await sc('start', 'winfleet-bad');
    // Not 1053 after a timeout: the shim called the dispatcher, then stopped with 87. The shim
    // may stop before sc.exe looks again, which sc reports as a failed start (exit 1, nothing
    // printed under load); what proves the dispatcher was reached is exit code 87 below, which
    // only a service that talks to the SCM can report.
    assert.doesNotMatch(`${started.stdout}${started.stderr}`, /1053/, 'sc start timed out');
    await waitFor(async () => (await status('winfleet-bad')).state === 'stopped', {
      description: 'winfleet-bad to stop',
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    assert.equal((await status('winfleet-bad')).win32ExitCode, 87, 'ERROR_INVALID_PARAMETER');
    assert.deepEqual(await winePids(prefix, 'C:\\k\\winfleet\\winfleet-agent.exe'), []);
  });

  test('an agent that exits with 3 stops the service with service-specific error 3', async () => {
    const config = {
      ...agentServiceConfig(),
      name: 'winfleet-exit3',
      displayName: 'winfleet exit 3',
      args: ['--log-dir', `${hostPaths.agentLogs}3`, '--', hostPaths.agentExe, '--exit', '3'],
    };
    const created = await sc(...scCreateArgs(config));
    assert.equal(created.code, 0, `sc create: ${created.stdout}${created.stderr}`);
    assert.equal((await sc('start', 'winfleet-exit3')).code, 0);
    const stopped = await waitFor(
      async () => {
        const s = await status('winfleet-exit3');
        return s.state === 'stopped' ? s : undefined;
      },
      { description: 'winfleet-exit3 to stop', timeoutMs: 30_000, intervalMs: 200 },
    );
    // What SCM recovery (with sc failureflag 1) treats as a failure, and what the Windows
    // HostOS reports as the service's exit code: 3.
    assert.deepEqual([stopped.win32ExitCode, stopped.serviceExitCode], [1066, 3]);
  });
});
