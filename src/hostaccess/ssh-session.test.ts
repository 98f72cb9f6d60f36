import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SimDomain } from '../../sim/hosts/active-directory.ts';
import { defaultPrograms, idleProgram } from '../../sim/hosts/programs.ts';
import { powerShellReadsStdin } from '../../sim/hosts/remote-commands.ts';
import { connectedSimHost } from '../../sim/testkit/ssh-host.ts';
import { errorCode } from '../errors/catalog.ts';
import { credentialsInput } from './domain-scripts.ts';
import { agentExecutable, remoteCommand } from './remote-scripts.ts';
import { maxCommandOutputBytes, SshSession, sftpPath } from './ssh-session.ts';

test('a private key that cannot be parsed is WF_SSH_KEY_INVALID, without connecting', async () => {
  const error = await SshSession.connect({
    host: '192.0.2.1', // TEST-NET-1: nothing answers; the key is refused before any connect
    port: 22,
    username: 'Administrator',
    privateKey: 'not a key',
  }).then(
    () => assert.fail('connected with a bad key'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_SSH_KEY_INVALID');
  assert.doesNotMatch((error as Error).message, /not a key/, 'the key never reaches the message');
});

test('Windows paths become OpenSSH SFTP paths', () => {
  assert.equal(sftpPath('C:\\k\\winfleet\\agent.json'), '/C:/k/winfleet/agent.json');
});

test('a command gets EOF on its stdin at once: powershell.exe that reads stdin still exits', async (t) => {
  const { host, session } = await connectedSimHost(t, { address: '127.0.0.160' });
  // Without -InputFormat None the simulated powershell.exe (like Windows PowerShell) reads its
  // stdin to the end before it exits; only the session closing stdin lets this finish.
  const line = remoteCommand('host-facts', {}).replace(' -InputFormat None', '');
  assert.ok(powerShellReadsStdin(line));
  const result = await session.exec(line, 10_000);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(host.ssh.execsWaitingForStdin, 0);
});

test('a command printing more than the operator keeps is stopped: a failed remote command naming the cap', async (t) => {
  const { session, remote } = await connectedSimHost(t, { address: '127.0.0.184' });
  const line = remoteCommand('host-facts', {});
  assert.ok(
    (await session.exec(line, 10_000)).stdout.length > 64,
    'host-facts prints more than 64 bytes',
  );
  const error = await session.exec(line, 10_000, 64).then(
    () => assert.fail('the command was not stopped'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_REMOTE_COMMAND_FAILED');
  assert.match((error as Error).message, /more than 64 bytes of output/);
  // The session still serves commands, and the default cap (16 MiB) lets a script through.
  assert.equal(maxCommandOutputBytes, 16 * 1024 * 1024);
  assert.ok((await remote.facts()).hostname);
});

test('input reaches the command over the SSH channel only: a join with credentials on stdin, refused without them', async (t) => {
  // Non-ASCII too: the SSH channel carries bytes, PowerShell decodes them in code page 437.
  const password = 'only-on-stdin-Pä€£55!';
  const domain = new SimDomain({ name: 'corp.example.com', username: 'joiner', password });
  const { host, session } = await connectedSimHost(t, {
    address: '127.0.0.161',
    activeDirectory: domain,
  });
  const line = remoteCommand('join-domain', { domain: 'corp.example.com' });
  assert.ok(!line.includes(password));
  const without = await session.exec(line, 10_000);
  assert.equal(without.code, 1, 'no credentials, no join');
  assert.equal(host.machine.domain, undefined);
  const input = credentialsInput({ username: 'CORP\\joiner', password });
  const joined = await session.exec(line, 10_000, undefined, input);
  assert.equal(joined.code, 0, joined.stderr);
  assert.equal(host.machine.domain, 'corp.example.com');
  assert.deepEqual(
    domain.attempts.map((a) => a.accepted),
    [true],
    'the domain saw one attempt: the one with credentials',
  );
});

test('a command that does not finish in time is WF_SSH_TIMEOUT, and the session still serves commands', async (t) => {
  const { host, session, remote } = await connectedSimHost(t, {
    address: '127.0.0.185',
    // An agent that runs until it is stopped, as a hung command does.
    programs: () =>
      defaultPrograms().register('winfleet-agent.exe', {
        run: async (context) => {
          await idleProgram(context);
          return 0;
        },
      }),
  });
  await host.machine.fs.writeFileAtomic(agentExecutable, 'agent');
  const error = await session.exec(`"${agentExecutable}" status`, 200).then(
    () => assert.fail('the command finished'),
    (e: unknown) => e,
  );
  assert.equal(errorCode(error), 'WF_SSH_TIMEOUT');
  assert.match((error as Error).message, /did not finish within 200 ms/);
  assert.ok((await remote.facts()).hostname);
});
