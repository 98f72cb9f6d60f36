/**
 * `npm run lab:fault`, run in process against a fault control channel over plain-object hosts,
 * its control file in a temporary lab directory: what it sends, what it prints, and its errors
 * when the command line is wrong or no lab runs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { runFaultCli } from './fault-cli.ts';
import {
  type FaultControl,
  faultCommandFor,
  faultControlFilePath,
  type LabFaultHost,
  startFaultControl,
  writeFaultControlFile,
} from './fault-control.ts';

const calls: unknown[][] = [];
const host: LabFaultHost = {
  name: 'simwin-10',
  services: () => [
    { name: 'containerd', state: 'Running' },
    { name: 'kubelet', state: calls.length ? 'Stopped' : 'Running' },
  ],
  faults: {
    crashService: (...args) => calls.push(['crashService', ...args]),
    crashLoop: (...args) => calls.push(['crashLoop', ...args]),
    deleteHnsNetwork: (...args) => calls.push(['deleteHnsNetwork', ...args]),
    skewClock: (...args) => calls.push(['skewClock', ...args]),
    diskFull: false,
    setUnreachable: (...args) => calls.push(['setUnreachable', ...args]),
    clear: () => calls.push(['clear']),
  },
};

let dir: string;
let control: FaultControl;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fault-cli-test-'));
  control = await startFaultControl([host]);
  await writeFaultControlFile(faultControlFilePath(dir), {
    url: control.url,
    token: control.token,
    kubeconfig: '/lab/cluster/admin.kubeconfig',
    namespace: 'winfleet-system',
    dashboard: 'http://127.0.0.1:9999/',
  });
});
after(async () => {
  await control.stop();
  await rm(dir, { recursive: true, force: true });
});

async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runFaultCli(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, env);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

test('a fault: sent to the lab, then what happened and how to watch it', async () => {
  calls.length = 0;
  const run = await cli(['--lab-dir', dir, 'simwin-10', 'service-down', 'kubelet']);
  assert.equal(run.code, 0, run.err);
  assert.deepEqual(calls, [['crashService', 'kubelet', { stayDown: true }]]);
  assert.match(run.out, /^simwin-10: kubelet on simwin-10 stopped and stays down/);
  assert.match(
    run.out,
    /^Watch the condition appear and the repair \(export KUBECONFIG=\/lab\/cluster\/admin\.kubeconfig\):$/m,
  );
  assert.match(run.out, /^ {2}kubectl get nodes -w$/m);
  assert.match(run.out, /^ {2}kubectl describe node simwin-10$/m);
  assert.match(
    run.out,
    /^ {2}kubectl get windowshosts simwin-10 -n winfleet-system -o yaml +# status\.remediation$/m,
  );
  assert.match(run.out, /^ {2}dashboard: http:\/\/127\.0\.0\.1:9999\/$/m);
  assert.ok(
    run.out.endsWith(
      `Undo every fault on it: npm run lab:fault -- --lab-dir ${dir} simwin-10 clear`,
    ),
    run.out,
  );
});

test('negative seconds, the lab found through WINFLEET_LAB_DIR, and list', async () => {
  calls.length = 0;
  const skew = await cli(['simwin-10', 'clock-skew', '-300'], { WINFLEET_LAB_DIR: dir });
  assert.equal(skew.code, 0, skew.err);
  assert.deepEqual(calls, [['skewClock', -300_000]]);
  assert.match(skew.out, /^simwin-10: simwin-10's clock is 300s behind$/m);
  const list = await cli(['--lab-dir', dir, 'list']);
  assert.equal(list.code, 0, list.err);
  assert.equal(
    list.out,
    'simwin-10  injected since the last clear: service-down kubelet, clock-skew -300s\n  services: containerd Running, kubelet Stopped',
  );
});

test('a wrong command line is refused before the lab is asked, naming what to fix', async () => {
  calls.length = 0;
  const cases: [string[], number, RegExp][] = [
    [
      ['simwin-10', 'clock-skew', '5m'],
      2,
      /^lab:fault: seconds "5m" is not a whole number; give the clock offset/,
    ],
    [['simwin-10', 'clock-skew', '999999'], 2, /seconds 999999 is out of range/],
    [['simwin-10', 'disk-full', 'now'], 2, /disk-full takes no argument; drop "now"/],
    [['simwin-10'], 2, /fault is missing; give one of service-down/],
    [['simwin-10', 'explode'], 2, /fault "explode" is not known; use one of/],
    [['simwin-10', 'service-down'], 2, /service is missing; give service-down one of kubelet/],
    [['list', 'simwin-10'], 2, /list takes no more arguments/],
    [['../etc', 'clear'], 2, /host "\.\.\/etc" is not a host name/],
    [[], 1, /missing required argument 'host'/],
  ];
  for (const [args, code, message] of cases) {
    const run = await cli(['--lab-dir', dir, ...args]);
    assert.equal(run.code, code, `${args.join(' ')}: ${run.err}`);
    assert.match(run.err, message);
  }
  assert.deepEqual(calls, []);
});

test('the lab refuses a host it does not have; no lab, a stopped lab: clear errors', async () => {
  const unknown = await cli(['--lab-dir', dir, 'simwin-99', 'disk-full']);
  assert.equal(unknown.code, 1);
  assert.match(
    unknown.err,
    /^lab:fault: the lab refused \(400\): host "simwin-99" is not a host of this lab; use one of simwin-10$/,
  );

  const empty = await mkdtemp(join(tmpdir(), 'fault-cli-nolab-'));
  try {
    const none = await cli(['--lab-dir', empty, 'simwin-10', 'clear']);
    assert.equal(none.code, 1);
    assert.match(
      none.err,
      /^lab:fault: No lab is running: \S+fault-control\.json does not exist; start one with make lab/,
    );
    // A control file left by a lab that was killed: its port no longer answers.
    const gone = await startFaultControl([host]);
    await gone.stop();
    await writeFaultControlFile(faultControlFilePath(empty), { url: gone.url, token: gone.token });
    const stale = await cli(['--lab-dir', empty, 'list']);
    assert.equal(stale.code, 1);
    assert.match(
      stale.err,
      /^lab:fault: No lab answers at http:\/\/127\.0\.0\.1:\d+: \S+ is left from a lab that stopped; start one with make lab$/,
    );
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});

test('the command printed for a lab directory is quoted for the shell when it needs it', () => {
  assert.equal(faultCommandFor(), 'npm run lab:fault --');
  assert.equal(faultCommandFor('/tmp/lab-1'), 'npm run lab:fault -- --lab-dir /tmp/lab-1');
  assert.equal(
    faultCommandFor("/tmp/my lab's"),
    "npm run lab:fault -- --lab-dir '/tmp/my lab'\\''s'",
  );
});

test('--watch: a wrong flag is refused before the lab is asked', async () => {
  calls.length = 0;
  const cases: [string[], RegExp][] = [
    [['simwin-10', 'disk-full', '--timeout', '60'], /--timeout is only for --watch; add --watch/],
    [
      ['simwin-10', 'disk-full', '--watch', '--timeout', '5'],
      /--timeout "5" is not whole seconds from 10 to 3600/,
    ],
    [
      ['simwin-10', 'disk-full', '--watch', '--timeout', '1h'],
      /--timeout "1h" is not whole seconds/,
    ],
    [['list', '--watch'], /list does not watch; give a host and a fault with --watch/],
  ];
  for (const [args, message] of cases) {
    const run = await cli(['--lab-dir', dir, ...args]);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.err}`);
    assert.match(run.err, message);
  }
  assert.deepEqual(calls, []);
});

test('--watch injects nothing when it cannot read the host through the API server', async () => {
  calls.length = 0;
  const lab = await mkdtemp(join(tmpdir(), 'fault-cli-watch-'));
  try {
    // The control file's kubeconfig (/lab/cluster/admin.kubeconfig) does not exist.
    await writeFaultControlFile(faultControlFilePath(lab), {
      url: control.url,
      token: control.token,
      kubeconfig: join(lab, 'missing.kubeconfig'),
    });
    const missing = await cli(['--lab-dir', lab, 'simwin-10', 'disk-full', '--watch']);
    assert.equal(missing.code, 1);
    assert.match(
      missing.err,
      /^lab:fault: --watch cannot load the lab's kubeconfig \S+missing\.kubeconfig \(ENOENT\)/,
    );

    // A kubeconfig whose API server port no longer answers.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const kubeconfig = join(lab, 'admin.kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: lab, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
        'users: [{name: admin, user: {token: not-printed-token}}]',
        'contexts: [{name: lab, context: {cluster: lab, user: admin}}]',
        'current-context: lab',
      ].join('\n'),
    );
    await writeFaultControlFile(faultControlFilePath(lab), {
      url: control.url,
      token: control.token,
      kubeconfig,
    });
    const down = await cli(['--lab-dir', lab, 'simwin-10', 'hns-delete', '--watch']);
    assert.equal(down.code, 1);
    assert.match(
      down.err,
      /^lab:fault: --watch cannot read Node simwin-10 through the API server \(ECONNREFUSED\); check that make lab is still running, or drop --watch$/,
    );
    assert.doesNotMatch(down.err + down.out, /not-printed-token/);
    assert.deepEqual(calls, []);
  } finally {
    await rm(lab, { recursive: true, force: true });
  }
});
