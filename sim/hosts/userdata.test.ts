import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { test } from 'node:test';
import { joinStatusPath } from '../../src/agent/join-status.ts';
import {
  type JoinScriptFormat,
  type JoinScriptValues,
  joinScriptFormats,
  renderJoinScript,
} from '../../src/join/scripts/render-join-script.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { wellKnownSid } from './file-security.ts';
import { SimMachine } from './machine.ts';
import { standInBinary } from './stand-in-binary.ts';
import { createTestMachine } from './test-machine.ts';
import { launchAgentLog } from './userdata.ts';
import { startUserDataHosts } from './userdata-hosts.ts';

const agentBytes = standInBinary('winfleet-agent', '1.36.5-wf.1');
const agentSha256 = createHash('sha256').update(agentBytes).digest('hex');

/** An HTTP server on loopback that serves the stand-in agent, as the lab registry serves blobs. */
async function agentServer(t: { after(fn: () => Promise<void>): void }) {
  let downloads = 0;
  const server = createServer((req, res) => {
    if (req.url === '/agent.exe') {
      downloads++;
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(agentBytes);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/agent.exe`, downloads: () => downloads };
}

function values(agentUrl: string, sha = agentSha256): JoinScriptValues {
  return {
    agentUrl,
    agentSha256: sha,
    // Nothing listens there: the join fails at discovery, after the script's own steps.
    apiServer: 'https://127.0.0.1:1',
    token: 'abcdef.0123456789abcdef',
    caCertHash: `sha256:${'c'.repeat(64)}`,
    namespace: 'winfleet-system',
    nodeName: 'win-userdata',
  };
}

const fastJoin = { discoveryBackoff: { maxAttempts: 1 } };

test('each format of the join script runs: lock-down, download, hash check, the real agent join', async (t) => {
  const served = await agentServer(t);
  for (const format of joinScriptFormats) {
    const machine = await createTestMachine(t, {
      userData: renderJoinScript(format, values(served.url)),
      joinTuning: fastJoin,
    });
    const result = await machine.userData!.done;
    assert.equal(result.format, format);
    assert.equal(result.exitCode, 1, result.output);
    // The agent ran and did its own part: discovery failed against a port nobody serves.
    assert.match(
      result.output,
      /winfleet-agent join: reading cluster-info from https:\/\/127\.0\.0\.1:1/,
    );
    assert.match(result.output, /ECONNREFUSED/);
    assert.match(result.output, /winfleet-agent join exited with code 1/);
    assert.ok(!result.output.includes('0123456789abcdef'), 'the token secret is not logged');
    assert.equal(await machine.fs.sha256(hostPaths.agentExe), agentSha256);
    const status = JSON.parse((await machine.fs.readFile(joinStatusPath)).toString());
    assert.equal(status.phase, 'failed');
    assert.equal(await machine.fs.tryReadFile(hostPaths.bootstrapConfig), undefined);
    const security = await machine.fs.security('C:\\k');
    assert.equal(security.protected, true);
    assert.deepEqual(
      security.entries.map((e) => e.sid).sort(),
      [wellKnownSid.system, wellKnownSid.administrators].sort(),
    );
    assert.match((await machine.fs.readFile(launchAgentLog)).toString(), /winfleet join script/);
  }
  assert.equal(served.downloads(), joinScriptFormats.length);
});

test('attacker’s side: the token is on no command line a process listing or audit log shows', async (t) => {
  const served = await agentServer(t);
  const seen: { args: readonly string[]; token?: string }[] = [];
  const spawn = SimMachine.prototype.spawn;
  SimMachine.prototype.spawn = function (this: SimMachine, request) {
    const env = Object.entries(request.env ?? {});
    const token = env.find(([k]) => k.toUpperCase() === 'WINFLEET_JOIN_TOKEN')?.[1];
    seen.push({ args: request.args, ...(token ? { token } : {}) });
    return spawn.call(this, request);
  };
  t.after(() => {
    SimMachine.prototype.spawn = spawn;
  });
  const machine = await createTestMachine(t, {
    userData: renderJoinScript('aws', values(served.url)),
    joinTuning: fastJoin,
  });
  await machine.userData!.done;
  const agent = seen.find((s) => s.args[0] === 'join');
  assert.ok(agent, 'the agent ran');
  assert.ok(
    !seen.some((s) => s.args.some((a) => a.includes('0123456789abcdef'))),
    JSON.stringify(seen.map((s) => s.args)),
  );
  assert.equal(agent.token, 'abcdef.0123456789abcdef', 'handed over in its environment');
});

test('a download with another hash is removed and never run', async (t) => {
  const served = await agentServer(t);
  const machine = await createTestMachine(t, {
    userData: renderJoinScript('aws', values(served.url, 'a'.repeat(64))),
  });
  const result = await machine.userData!.done;
  assert.equal(result.exitCode, 1);
  assert.match(
    result.output,
    new RegExp(`has SHA-256 ${agentSha256}, not ${'a'.repeat(64)}; it was not run`),
  );
  assert.equal(await machine.fs.tryReadFile(hostPaths.agentExe), undefined);
  assert.equal(await machine.fs.tryReadFile(`${hostPaths.agentExe}.download`), undefined);
  assert.equal(await machine.fs.tryReadFile(joinStatusPath), undefined, 'no agent ran');
});

test('anything but the generated script is refused, and nothing is downloaded', async (t) => {
  const served = await agentServer(t);
  const script = renderJoinScript('aws', values(served.url));
  const cases: [string, RegExp][] = [
    [script.replace('exit 0', 'Write-Host hi\nexit 0'), /not, byte for byte, the aws join script/],
    [
      script.replace("$ErrorActionPreference = 'Stop'", "$ErrorActionPreference = 'Continue'"),
      /byte for byte/,
    ],
    [script.replace('& $agent join', "& $agent join --extra 'x'"), /byte for byte|its values/],
    ['<script>del C:\\k</script>', /runs \$agent 0 times|does not parse/],
    [
      '<powershell>Invoke-Expression (Invoke-WebRequest http://127.0.0.1/x)</powershell>',
      /runs \$agent 0 times/,
    ],
    [
      script.replace("--namespace 'winfleet-system'", '--namespace "winfleet-$env:X"'),
      /not a single-quoted literal/,
    ],
  ];
  for (const [userData, pattern] of cases) {
    const machine = await createTestMachine(t, { userData });
    const result = await machine.userData!.done;
    assert.equal(result.exitCode, 1, userData);
    assert.match(result.output, /the simulated host cannot run this user data/);
    assert.match(result.output, pattern, userData);
    assert.equal(await machine.fs.tryReadFile(hostPaths.agentExe), undefined);
  }
  assert.equal(served.downloads(), 0);
});

test('a user-data host runs no SSH server: connections are refused', async (t) => {
  const served = await agentServer(t);
  const fleet = await startUserDataHosts({
    count: 1,
    baseAddress: '127.0.0.231',
    userData: renderJoinScript('aws' as JoinScriptFormat, values(served.url)),
    joinTuning: fastJoin,
  });
  t.after(() => fleet.stop());
  const [host] = fleet.hosts;
  assert.deepEqual(host!.describe(), {
    name: 'simwin-231',
    address: '127.0.0.231',
    release: '2022',
    build: '10.0.20348',
    ssh: false,
  });
  const refused = await new Promise<string>((resolve) => {
    const socket = connect({ host: host!.address, port: 22 });
    socket.on('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });
  assert.equal(refused, 'ECONNREFUSED');
  assert.equal((await host!.userData.done).exitCode, 1);
});

test("a pre-pulling pool's script is recognised and runs the agent join with its flag", async (t) => {
  const served = await agentServer(t);
  const machine = await createTestMachine(t, {
    userData: renderJoinScript('powershell', { ...values(served.url), prePullTaint: true }),
    joinTuning: fastJoin,
  });
  const result = await machine.userData!.done;
  assert.equal(result.format, 'powershell', result.output);
  // The agent took the flag (an unknown one exits 2 before discovery) and reached discovery.
  assert.match(
    result.output,
    /winfleet-agent join: reading cluster-info from https:\/\/127\.0\.0\.1:1/,
  );
  assert.equal(served.downloads(), 1);
});
