/**
 * The lab's fault control channel, bound to a fleet of plain objects that record what they are
 * asked: each fault reaches the right host's knob, and (attacker side) nothing without the
 * token, another Host, path or method, an oversized or non-JSON body, an unknown host or a bad
 * number reaches any knob at all. Also the control file: written 0600, refused when more open.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { startSimulatedHosts } from '../hosts/fleet.ts';
import { generateTestKey } from '../hosts/ssh-test-client.ts';
import {
  type FaultControl,
  type LabFaultHost,
  labFaultHosts,
  maxBodyBytes,
  readFaultControlFile,
  removeFaultControlFile,
  startFaultControl,
  writeFaultControlFile,
} from './fault-control.ts';

/** A host whose fault knobs record their calls. */
function fakeHost(name: string, services: string[]) {
  const calls: unknown[][] = [];
  let diskFull = false;
  const host: LabFaultHost = {
    name,
    services: () => services.map((s) => ({ name: s, state: 'Running' })),
    faults: {
      crashService: (...args) => calls.push(['crashService', ...args]) && true,
      crashLoop: (...args) => calls.push(['crashLoop', ...args]),
      deleteHnsNetwork: (...args) => calls.push(['deleteHnsNetwork', ...args]),
      skewClock: (...args) => {
        calls.push(['skewClock', ...args]);
        if (services.length === 1) throw new RangeError('Cannot skew this clock; boot it first');
      },
      get diskFull() {
        return diskFull;
      },
      set diskFull(full: boolean) {
        calls.push(['diskFull', full]);
        diskFull = full;
      },
      setUnreachable: async (...args) => {
        calls.push(['setUnreachable', ...args]);
      },
      clear: () => {
        calls.push(['clear']);
        diskFull = false;
      },
    },
  };
  return { host, calls };
}

const all = ['containerd', 'kubelet', 'kube-proxy', 'winfleet-agent'];
const a = fakeHost('SIMWIN-10', all);
const b = fakeHost('simwin-11', ['containerd']);
let control: FaultControl;
let port: number;

before(async () => {
  control = await startFaultControl([a.host, b.host]);
  port = Number(new URL(control.url).port);
});
after(() => control.stop());
beforeEach(() => {
  a.calls.length = 0;
  b.calls.length = 0;
});

interface Sent {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body chunked, without a Content-Length. */
  chunked?: boolean;
}

/** One raw HTTP request (so a test can send any header, path or body). */
function send({ method = 'GET', path = '/v1/hosts', headers = {}, body, chunked }: Sent) {
  return new Promise<{
    status: number;
    json: { error?: string } & Record<string, unknown>;
    headers: Record<string, unknown>;
  }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          json: JSON.parse(Buffer.concat(chunks).toString() || '{}'),
          headers: res.headers,
        }),
      );
    });
    req.on('error', reject);
    if (body !== undefined && chunked) {
      const data = Buffer.from(body);
      for (let i = 0; i < data.length; i += 1000) req.write(data.subarray(i, i + 1000));
    } else if (body !== undefined) {
      req.setHeader('content-length', Buffer.byteLength(body));
      req.write(body);
    }
    req.end();
  });
}

const auth = () => ({ authorization: `Bearer ${control.token}` });

function inject(body: unknown, headers: Record<string, string> = {}) {
  return send({
    method: 'POST',
    path: '/v1/faults',
    headers: { ...auth(), 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

test('each fault reaches the knob of the named host, and list shows what was injected', async () => {
  const cases: [unknown, unknown[]][] = [
    [
      { host: 'simwin-10', fault: 'service-down', service: 'kubelet' },
      ['crashService', 'kubelet', { stayDown: true }],
    ],
    [
      { host: 'simwin-10', fault: 'crash-loop', service: 'containerd' },
      ['crashLoop', 'containerd'],
    ],
    [{ host: 'simwin-10', fault: 'hns-delete' }, ['deleteHnsNetwork']],
    [{ host: 'simwin-10', fault: 'clock-skew', seconds: -600 }, ['skewClock', -600_000]],
    [{ host: 'simwin-10', fault: 'disk-full' }, ['diskFull', true]],
    [{ host: 'simwin-10', fault: 'unreachable' }, ['setUnreachable', true]],
  ];
  for (const [body, call] of cases) {
    const answer = await inject(body);
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(answer.json.host, 'simwin-10');
    assert.deepEqual(a.calls.pop(), call);
  }
  assert.deepEqual(b.calls, []);
  const listed = await send({ headers: auth() });
  assert.equal(listed.status, 200);
  const hosts = listed.json.hosts as {
    name: string;
    diskFull: boolean;
    injected: { fault: string }[];
  }[];
  assert.deepEqual(
    hosts.map((h) => [h.name, h.diskFull, h.injected.map((f) => f.fault)]),
    [
      [
        'simwin-10',
        true,
        [
          'service-down kubelet',
          'crash-loop containerd',
          'hns-delete',
          'clock-skew -600s',
          'disk-full',
          'unreachable',
        ],
      ],
      ['simwin-11', false, []],
    ],
  );
  const cleared = await inject({ host: 'SimWin-10', fault: 'clear' });
  assert.equal(cleared.status, 200);
  assert.deepEqual(a.calls, [['clear']]);
  const after = (await send({ headers: auth() })).json.hosts as { injected: unknown[] }[];
  assert.deepEqual(after[0]!.injected, []);
});

test("a host's own refusal comes back as 409 in its words; the channel keeps serving", async () => {
  const answer = await inject({ host: 'simwin-11', fault: 'clock-skew', seconds: 60 });
  assert.equal(answer.status, 409);
  assert.equal(
    answer.json.error,
    'simwin-11 cannot take clock-skew 60s: Cannot skew this clock; boot it first',
  );
  const list = await send({ headers: auth() });
  assert.deepEqual((list.json.hosts as { injected: unknown[] }[])[1]!.injected, []);
});

test('without the right token nothing is looked at: 401 on every path', async () => {
  const wrong = `${control.token.slice(0, -1)}${control.token.endsWith('A') ? 'B' : 'A'}`;
  const attempts: Sent[] = [
    {},
    { headers: { authorization: `Bearer ${wrong}` } },
    { headers: { authorization: `Bearer ${control.token}x` } },
    { headers: { authorization: `Bearer ${control.token.slice(0, -1)}` } },
    { headers: { authorization: `bearer ${control.token}` } },
    { headers: { authorization: `Basic ${Buffer.from(`x:${control.token}`).toString('base64')}` } },
    { headers: { authorization: 'Bearer ' } },
    { path: `/v1/hosts?token=${control.token}` },
    { path: '/admin' },
    { path: '/../../etc/passwd' },
    {
      method: 'POST',
      path: '/v1/faults',
      headers: { authorization: `Bearer ${wrong}`, 'content-type': 'application/json' },
      body: JSON.stringify({ host: 'simwin-10', fault: 'disk-full' }),
    },
  ];
  for (const attempt of attempts) {
    const answer = await send(attempt);
    assert.equal(answer.status, 401, JSON.stringify(attempt));
    assert.equal(answer.headers['www-authenticate'], 'Bearer');
    assert.match(
      answer.json.error!,
      /^Authorization: send "Bearer <token>" with the token from the lab’s fault-control\.json/,
    );
  }
  assert.deepEqual(a.calls, []);
});

test('with the token: only 127.0.0.1:<port> as Host, only the two paths and their methods', async () => {
  const misdirected = await send({ headers: { ...auth(), host: 'attacker.example' } });
  assert.equal(misdirected.status, 421);
  assert.match(misdirected.json.error!, /^Host: address the lab as 127\.0\.0\.1:\d+$/);
  for (const path of ['/', '/v1/hosts/', '/v1/hosts?x=1', '/v1/faults/../hosts', '/v2/faults']) {
    const answer = await send({ path, headers: auth() });
    assert.equal(answer.status, 404, path);
    assert.match(answer.json.error!, /use GET \/v1\/hosts or POST \/v1\/faults$/);
  }
  const del = await send({ method: 'DELETE', path: '/v1/faults', headers: auth() });
  assert.equal(del.status, 405);
  assert.equal(del.headers.allow, 'POST');
  const get = await send({ method: 'GET', path: '/v1/faults', headers: auth() });
  assert.equal(get.status, 405);
  const post = await send({ method: 'POST', path: '/v1/hosts', headers: auth() });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, 'GET');
});

test('bodies: JSON only, at most 4 KiB, however it is sent', async () => {
  const big = JSON.stringify({
    host: 'simwin-10',
    fault: 'disk-full',
    pad: 'x'.repeat(maxBodyBytes),
  });
  const headers = { ...auth(), 'content-type': 'application/json' };
  for (const chunked of [false, true]) {
    const answer = await send({ method: 'POST', path: '/v1/faults', headers, body: big, chunked });
    assert.equal(answer.status, 413, `chunked ${chunked}`);
    assert.match(answer.json.error!, /^Body: send at most 4096 bytes/);
  }
  const plain = await send({
    method: 'POST',
    path: '/v1/faults',
    headers: { ...auth(), 'content-type': 'text/plain' },
    body: '{}',
  });
  assert.equal(plain.status, 415);
  assert.match(plain.json.error!, /^Content-Type: send the body as application\/json$/);
  const broken = await send({
    method: 'POST',
    path: '/v1/faults',
    headers,
    body: '{"host": "simwin-10",',
  });
  assert.equal(broken.status, 400);
  assert.match(broken.json.error!, /^Body: send a JSON object/);
  assert.deepEqual(a.calls, []);
});

test('an unknown host, service, fault or a bad number is refused by name, with the fix', async () => {
  const refusals: [unknown, RegExp][] = [
    [
      { host: 'simwin-99', fault: 'disk-full' },
      /^host "simwin-99" is not a host of this lab; use one of simwin-10, simwin-11$/,
    ],
    [
      { host: 'simwin-11', fault: 'service-down', service: 'kubelet' },
      /^service "kubelet" is not installed on simwin-11 \(yet\); use one of containerd$/,
    ],
    [
      { host: 'simwin-10', fault: 'service-down', service: 'explorer' },
      /^service "explorer" is not one service-down can target; give service-down one of kubelet, /,
    ],
    [{ host: 'simwin-10', fault: 'format-c' }, /^fault "format-c" is not known; use one of /],
    [
      { host: 'simwin-10', fault: 'clock-skew', seconds: 1e9 },
      /^seconds 1000000000 is out of range/,
    ],
    [
      { host: 'simwin-10', fault: 'clock-skew', seconds: '60' },
      /^seconds "60" is not a whole number/,
    ],
    [
      { host: 'simwin-10', fault: 'clock-skew', seconds: 0.5 },
      /^seconds 0.5 is not a whole number/,
    ],
    [
      { host: 'simwin-10', fault: 'disk-full', now: true },
      /^Field "now" is not expected with fault disk-full/,
    ],
    [['simwin-10', 'disk-full'], /^The request body must be a JSON object/],
  ];
  for (const [body, message] of refusals) {
    const answer = await inject(body);
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.match(answer.json.error!, message);
  }
  assert.deepEqual([...a.calls, ...b.calls], []);
});

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fault-control-test-'));
});
after(() => rm(dir, { recursive: true, force: true }));

test('the control file is written 0600 and refused when more open, missing or odd', async () => {
  const path = join(dir, 'lab', 'fault-control.json');
  await assert.rejects(
    readFaultControlFile(path),
    /^Error: No lab is running: \S+ does not exist; start one with make lab/,
  );
  await writeFaultControlFile(path, { url: 'http://127.0.0.1:4567', token: 'abc_DEF-1' });
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  assert.equal((await stat(join(dir, 'lab'))).mode & 0o777, 0o700);
  assert.deepEqual(await readFaultControlFile(path), {
    url: 'http://127.0.0.1:4567',
    token: 'abc_DEF-1',
  });
  await chmod(path, 0o644);
  await assert.rejects(
    readFaultControlFile(path),
    /is readable by other users \(mode 644\); .*chmod 600/,
  );
  await writeFile(path, '{"url": "http://attacker.example:80", "token": "x"}', { mode: 0o600 });
  await chmod(path, 0o600);
  await assert.rejects(
    readFaultControlFile(path),
    /lacks a loopback url and a token; restart the lab/,
  );
  // A lab removes the file only while it still holds its own token.
  await writeFaultControlFile(path, { url: 'http://127.0.0.1:4567', token: 'newer' });
  await removeFaultControlFile(path, 'older');
  assert.match(await readFile(path, 'utf8'), /"newer"/);
  await removeFaultControlFile(path, 'newer');
  await assert.rejects(stat(path), { code: 'ENOENT' });
});

test('over a real simulated host, the channel turns its fault knobs', async () => {
  const fleet = await startSimulatedHosts({
    count: 1,
    authorizedKeys: [generateTestKey().publicKey],
  });
  const real = await startFaultControl(labFaultHosts(fleet));
  const machine = fleet.hosts[0]!.machine;
  const name = fleet.hosts[0]!.name;
  const post = (body: unknown) =>
    fetch(`${real.url}/v1/faults`, {
      method: 'POST',
      headers: { authorization: `Bearer ${real.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, json: (await r.json()) as Record<string, string> }));
  try {
    assert.equal((await post({ host: name, fault: 'disk-full' })).status, 200);
    assert.equal(machine.fs.diskFull, true);
    assert.equal((await post({ host: name, fault: 'clock-skew', seconds: 120 })).status, 200);
    assert.equal(machine.clockOffsetMs, 120_000);
    // Not bootstrapped: no winfleet service is installed yet.
    const down = await post({ host: name, fault: 'service-down', service: 'kubelet' });
    assert.equal(down.status, 400);
    assert.match(
      down.json.error!,
      /^service "kubelet" is not installed on simwin-10 \(yet\); use one of \(none: wait until the host joined\)$/,
    );
    assert.equal((await post({ host: name, fault: 'clear' })).status, 200);
    assert.equal(machine.fs.diskFull, false);
    assert.equal(machine.clockOffsetMs, 0);
  } finally {
    await real.stop();
    await fleet.stop();
  }
});
