import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import ssh2, { type Client, type SFTPWrapper } from 'ssh2';
import { remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { parsePowerShellJson } from '../../src/powershell/powershell.ts';
import { type SimulatedHosts, startSimulatedHosts } from './fleet.ts';
import { connect, exec, generateTestKey, openSftp, sftpCall } from './ssh-test-client.ts';

const key = generateTestKey();
let fleet: SimulatedHosts;

before(async () => {
  fleet = await startSimulatedHosts({
    count: 1,
    releases: ['2022'],
    baseAddress: '127.0.0.60',
    authorizedKeys: [key.publicKey],
  });
});
after(() => fleet.stop());

const host = () => fleet.hosts[0]!;
const { STATUS_CODE } = ssh2.utils.sftp;

async function session(t: { after(fn: () => void): void }): Promise<Client> {
  const { client } = await connect(host(), { key });
  t.after(() => client.end());
  return client;
}

test('the host listens on its own address and presents its host key', async (t) => {
  const { client, hostKeyFingerprint } = await connect(host(), { key });
  t.after(() => client.end());
  assert.equal(host().address, '127.0.0.60');
  assert.equal(hostKeyFingerprint, host().hostKeyFingerprint);
  assert.match(hostKeyFingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
  const authorized = await host().machine.fs.readFile(
    'C:\\ProgramData\\ssh\\administrators_authorized_keys',
  );
  assert.match(authorized.toString(), /^ssh-ed25519 /);
});

test('only the authorized key of an existing account gets in', async () => {
  await assert.rejects(
    connect(host(), { password: 'Passw0rd!' }),
    /All configured authentication methods failed/,
  );
  await assert.rejects(
    connect(host(), { key: generateTestKey() }),
    /All configured authentication methods failed/,
  );
  await assert.rejects(
    connect(host(), { key, username: 'guest' }),
    /All configured authentication methods failed/,
  );
  await assert.rejects(
    connect(host(), { tryKeyboard: true, password: 'x' }),
    /All configured authentication methods failed/,
  );
  const { client } = await connect(host(), { key, username: 'administrator' });
  client.end();
});

test('catalog scripts run over exec and print their JSON', async (t) => {
  const client = await session(t);
  const facts = await exec(client, remoteCommand('host-facts', {}));
  assert.equal(facts.code, 0);
  const parsed = parsePowerShellJson(facts.stdout, 'facts') as {
    hostname: string;
    osVersion: { build: number };
  };
  assert.equal(parsed.hostname, host().name);
  assert.equal(parsed.osVersion.build, 20348);
  const refused = await exec(client, 'whoami');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /does not support this command/);
});

test('keepalive requests are answered', async (t) => {
  const { client } = await connect(host(), { key, keepaliveInterval: 50, keepaliveCountMax: 2 });
  t.after(() => client.end());
  let closed = false;
  client.on('close', () => {
    closed = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(closed, false);
  assert.equal((await exec(client, remoteCommand('host-facts', {}))).code, 0);
});

async function sftpSession(t: { after(fn: () => void): void }): Promise<SFTPWrapper> {
  return openSftp(await session(t));
}

test('SFTP puts, gets, stats and lists in the /C:/ path style', async (t) => {
  const sftp = await sftpSession(t);
  assert.equal(await sftpCall<string>((d) => sftp.realpath('.', d)), '/C:/Users/Administrator');
  await sftpCall((d) => sftp.mkdir('/C:/k', d as never));
  await sftpCall((d) => sftp.mkdir('/C:/k/winfleet', d as never));
  const payload = Buffer.alloc(300_000, 7);
  await sftpCall((d) => sftp.writeFile('/C:/k/winfleet/kubelet.exe', payload, d as never));
  const back = await sftpCall<Buffer>((d) => sftp.readFile('/C:/k/winfleet/kubelet.exe', d));
  assert.ok(back.equals(payload));
  const stats = await sftpCall<ssh2.Stats>((d) => sftp.stat('/C:/K/WINFLEET/KUBELET.EXE', d));
  assert.equal(stats.size, payload.length);
  assert.ok(stats.isFile());
  assert.ok((await sftpCall<ssh2.Stats>((d) => sftp.lstat('C:\\k\\winfleet', d))).isDirectory());
  const listing = await sftpCall<ssh2.FileEntry[]>((d) => sftp.readdir('C:/k/winfleet', d));
  assert.deepEqual(
    listing.map((e) => e.filename),
    ['kubelet.exe'],
  );
  assert.equal(
    (await host().machine.fs.readFile('C:\\k\\winfleet\\kubelet.exe')).length,
    payload.length,
    'the file is on the simulated drive',
  );
  assert.equal(
    await sftpCall<string>((d) => sftp.realpath('/c:/k/./winfleet/../winfleet', d)),
    '/C:/k/winfleet',
  );
  assert.deepEqual(
    (await sftpCall<ssh2.FileEntry[]>((d) => sftp.readdir('/', d))).map((e) => e.filename),
    ['C:'],
  );
});

test('SFTP rename, posix-rename, remove and rmdir with OpenSSH status codes', async (t) => {
  const sftp = await sftpSession(t);
  const write = (path: string, text: string) =>
    sftpCall((d) => sftp.writeFile(path, text, d as never));
  const code = async (call: Promise<unknown>) =>
    (
      (await call.then(
        () => ({ code: 0 }),
        (e) => e,
      )) as { code: number }
    ).code;
  await sftpCall((d) => sftp.mkdir('/C:/r', d as never));
  await write('/C:/r/a.tmp', 'new');
  await write('/C:/r/a.exe', 'old');
  assert.equal(
    await code(sftpCall((d) => sftp.rename('/C:/r/a.tmp', '/C:/r/a.exe', d as never))),
    STATUS_CODE.FAILURE,
  );
  await sftpCall((d) => sftp.ext_openssh_rename('/C:/r/a.tmp', '/C:/r/a.exe', d as never));
  assert.equal((await sftpCall<Buffer>((d) => sftp.readFile('/C:/r/a.exe', d))).toString(), 'new');
  assert.equal(await code(sftpCall((d) => sftp.stat('/C:/r/a.tmp', d))), STATUS_CODE.NO_SUCH_FILE);
  assert.equal(await code(sftpCall((d) => sftp.rmdir('/C:/r', d as never))), STATUS_CODE.FAILURE);
  assert.equal(await code(sftpCall((d) => sftp.mkdir('/C:/r', d as never))), STATUS_CODE.FAILURE);
  assert.equal(
    await code(sftpCall((d) => sftp.mkdir('/C:/missing/x', d as never))),
    STATUS_CODE.NO_SUCH_FILE,
  );
  assert.equal(
    await code(sftpCall((d) => sftp.open('/C:/missing.txt', 'r', d))),
    STATUS_CODE.NO_SUCH_FILE,
  );
  assert.equal(await code(sftpCall((d) => sftp.stat('/k/no-drive', d))), STATUS_CODE.NO_SUCH_FILE);
  await sftpCall((d) => sftp.unlink('/C:/r/a.exe', d as never));
  await sftpCall((d) => sftp.rmdir('/C:/r', d as never));
  assert.equal(await host().machine.fs.stat('C:\\r'), undefined);
});

test('SFTP open flags: exclusive create, append and truncate', async (t) => {
  const sftp = await sftpSession(t);
  const handle = await sftpCall<Buffer>((d) => sftp.open('/C:/flags.txt', 'wx', d));
  await sftpCall((d) => sftp.write(handle, Buffer.from('abc'), 0, 3, 0, d as never));
  await sftpCall((d) => sftp.close(handle, d as never));
  await assert.rejects(
    sftpCall((d) => sftp.open('/C:/flags.txt', 'wx', d)),
    { code: STATUS_CODE.FAILURE },
  );
  await sftpCall((d) => sftp.appendFile('/C:/flags.txt', 'def', d as never));
  assert.equal((await host().machine.fs.readFile('C:\\flags.txt')).toString(), 'abcdef');
  await sftpCall((d) => sftp.writeFile('/C:/flags.txt', 'x', d as never));
  assert.equal((await host().machine.fs.readFile('C:\\flags.txt')).toString(), 'x');
  await sftpCall((d) => sftp.setstat('/C:/flags.txt', { mtime: 0, atime: 0 }, d as never));
});

test('a non-admin account reads what C:\\ lets users read until protect-directory locks the folder', async (t) => {
  const aliceKey = generateTestKey();
  host().ssh.addStandardUser('alice', aliceKey.publicKey);
  await host().machine.fs.writeFileAtomic('C:\\locked\\pki\\node.key', 'SECRET');
  const { client } = await connect(host(), { key: aliceKey, username: 'alice' });
  t.after(() => client.end());
  const sftp = await openSftp(client);
  const read = () => sftpCall<Buffer>((d) => sftp.readFile('/C:/locked/pki/node.key', d));
  const plant = () => sftpCall((d) => sftp.writeFile('/C:/locked/evil.exe', 'MZ', d as never));
  assert.equal((await read()).toString(), 'SECRET', 'C:\\ lets Users read what is below it');
  await plant();
  assert.equal(
    (await host().machine.fs.security('C:\\locked\\evil.exe')).owner,
    'S-1-5-21-1004336348-1177238915-682003330-1001',
    'what alice creates, alice owns',
  );

  const admin = await session(t);
  const locked = await exec(admin, remoteCommand('protect-directory', { path: 'C:\\locked' }));
  assert.equal(locked.code, 0, locked.stderr);
  assert.deepEqual(parsePowerShellJson(locked.stdout, 'protect-directory'), { ok: true });

  await assert.rejects(read(), { code: STATUS_CODE.PERMISSION_DENIED });
  await assert.rejects(plant(), { code: STATUS_CODE.PERMISSION_DENIED });
  await assert.rejects(
    sftpCall((d) => sftp.readdir('/C:/locked/pki', d)),
    { code: STATUS_CODE.PERMISSION_DENIED },
  );
  await assert.rejects(
    sftpCall((d) => sftp.unlink('/C:/locked/evil.exe', d as never)),
    { code: STATUS_CODE.PERMISSION_DENIED },
  );
  const security = await host().machine.fs.security('C:\\locked');
  assert.deepEqual(
    {
      owner: security.owner,
      protected: security.protected,
      sids: security.entries.map((e) => e.sid),
    },
    { owner: 'S-1-5-32-544', protected: true, sids: ['S-1-5-18', 'S-1-5-32-544'] },
  );
  const refused = await exec(client, remoteCommand('host-facts', {}));
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /runs commands only for administrators; alice is not one/);
  const missing = await exec(admin, remoteCommand('protect-directory', { path: 'C:\\nowhere' }));
  assert.equal(missing.code, 1);
  assert.match(
    missing.stderr,
    /Set-Acl : Cannot find path 'C:\\nowhere' because it does not exist/,
  );
});

/** `remoteCommand`'s line without -InputFormat None: powershell.exe then reads its stdin. */
function readingStdin(line: string): string {
  const stripped = line.replace(' -InputFormat None', '');
  assert.notEqual(stripped, line);
  return stripped;
}

test('powershell.exe without -InputFormat None runs, then exits only once its stdin ends', async (t) => {
  const client = await session(t);
  const channel = await new Promise<ssh2.ClientChannel>((resolve, reject) =>
    client.exec(readingStdin(remoteCommand('host-facts', {})), (e, c) =>
      e ? reject(e) : resolve(c),
    ),
  );
  let stdout = '';
  const events: string[] = [];
  channel.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  channel.on('exit', (code: number) => events.push(`exit ${code}`));
  const closed = new Promise((resolve) => channel.on('close', resolve));
  await waitFor(async () => stdout.includes('\r\n') && host().ssh.execsWaitingForStdin === 1, {
    description: 'the script output and powershell.exe waiting for stdin',
    timeoutMs: 10_000,
    intervalMs: 10,
  });
  assert.deepEqual(events, [], 'no exit while stdin is open');
  assert.equal(
    (parsePowerShellJson(stdout, 'facts') as { hostname: string }).hostname,
    host().name,
  );
  channel.end();
  await closed;
  assert.deepEqual(events, ['exit 0']);
  assert.equal(host().ssh.execsWaitingForStdin, 0);
});

test('with -InputFormat None powershell.exe exits though its stdin stays open', async (t) => {
  const client = await session(t);
  // The test client never closes stdin.
  const result = await exec(client, remoteCommand('host-facts', {}), 10_000);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(host().ssh.execsWaitingForStdin, 0);
});

test('removing an L2Bridge network resets the adapter: SSH connections drop, then come back', async (t) => {
  const client = await session(t);
  const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
  const { machine } = host();
  const nat = machine.hns.ensure('nat', 'NAT');
  assert.equal(machine.removeHnsNetwork(nat.id), true);
  assert.equal((await exec(client, remoteCommand('host-facts', {}))).code, 0, 'NAT: no reset');
  const network = machine.hns.ensure('winfleet', 'L2Bridge');
  assert.equal(machine.removeHnsNetwork(network.id), true);
  await closed;
  await assert.rejects(connect(host(), { key }), 'the address is gone for a moment');
  const { client: again } = await waitFor(() => connect(host(), { key }), {
    description: 'SSH answering again after the adapter reset',
    timeoutMs: 10_000,
    intervalMs: 100,
  });
  t.after(() => again.end());
  assert.equal((await exec(again, remoteCommand('host-facts', {}))).code, 0);
});
