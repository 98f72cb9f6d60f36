import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServiceConfig } from '../host-os.ts';
import {
  scConfigArgs,
  scCreateArgs,
  scDeleteArgs,
  scDescriptionArgs,
  scFailureArgs,
  scFailureFlagArgs,
  scQcArgs,
  scQueryExArgs,
  scStartArgs,
  scStopArgs,
} from './sc-commands.ts';

const kubelet: ServiceConfig = {
  name: 'kubelet',
  displayName: 'Kubernetes kubelet',
  description: 'winfleet: the Kubernetes node agent',
  binaryPath: 'C:\\k\\kubelet.exe',
  args: [
    '--windows-service',
    '--hostname-override=win-2022-a',
    '--log-file=C:\\var\\log\\kubelet dir\\kubelet.log',
  ],
  dependencies: ['containerd'],
  startType: 'auto',
  recovery: { restartDelaysMs: [5000, 5000, 30000], resetPeriodSeconds: 86400 },
};

test('sc create carries the quoted command line, display name, start type and dependencies', () => {
  assert.deepEqual(scCreateArgs(kubelet), [
    'create',
    'kubelet',
    'type=',
    'own',
    'binPath=',
    '"C:\\k\\kubelet.exe" --windows-service --hostname-override=win-2022-a "--log-file=C:\\var\\log\\kubelet dir\\kubelet.log"',
    'DisplayName=',
    'Kubernetes kubelet',
    'start=',
    'auto',
    'depend=',
    'containerd',
  ]);
  const proxy = scCreateArgs({
    ...kubelet,
    name: 'kube-proxy',
    binaryPath: 'C:\\k\\kube-proxy.exe',
    args: [],
    dependencies: ['kubelet', 'containerd'],
    startType: 'delayed-auto',
  });
  assert.deepEqual(proxy.slice(-4), ['start=', 'delayed-auto', 'depend=', 'kubelet/containerd']);
  const alone = scCreateArgs({ ...kubelet, dependencies: [], startType: 'demand' });
  assert.deepEqual(alone.slice(-2), ['start=', 'demand']);
});

test('sc config sets the same fields and clears dependencies with "/"', () => {
  assert.deepEqual(scConfigArgs({ ...kubelet, startType: 'disabled', dependencies: [] }), [
    'config',
    'kubelet',
    'binPath=',
    '"C:\\k\\kubelet.exe" --windows-service --hostname-override=win-2022-a "--log-file=C:\\var\\log\\kubelet dir\\kubelet.log"',
    'DisplayName=',
    'Kubernetes kubelet',
    'start=',
    'disabled',
    'depend=',
    '/',
  ]);
  assert.deepEqual(scConfigArgs(kubelet).slice(-2), ['depend=', 'containerd']);
});

test('sc description, failure and failureflag', () => {
  assert.deepEqual(scDescriptionArgs('kubelet', 'winfleet: the node agent'), [
    'description',
    'kubelet',
    'winfleet: the node agent',
  ]);
  assert.deepEqual(scDescriptionArgs('kubelet', ''), ['description', 'kubelet', '']);
  assert.deepEqual(scFailureArgs('kubelet', kubelet.recovery), [
    'failure',
    'kubelet',
    'reset=',
    '86400',
    'actions=',
    'restart/5000/restart/5000/restart/30000',
  ]);
  assert.deepEqual(scFailureArgs('kubelet', { restartDelaysMs: [], resetPeriodSeconds: 0 }), [
    'failure',
    'kubelet',
    'reset=',
    '0',
    'actions=',
    '',
  ]);
  assert.deepEqual(scFailureFlagArgs('kubelet'), ['failureflag', 'kubelet', '1']);
});

test('start, stop, queryex, qc (with the 8 KiB buffer) and delete', () => {
  assert.deepEqual(scStartArgs('kubelet'), ['start', 'kubelet']);
  assert.deepEqual(scStopArgs('kubelet'), ['stop', 'kubelet']);
  assert.deepEqual(scQueryExArgs('kubelet'), ['queryex', 'kubelet']);
  assert.deepEqual(scQcArgs('kubelet'), ['qc', 'kubelet', '8192']);
  assert.deepEqual(scDeleteArgs('kubelet'), ['delete', 'kubelet']);
});

test('refuses names and values sc.exe would misread', () => {
  assert.throws(() => scStartArgs(''), /Cannot use "" as a service name/);
  assert.throws(
    () => scStartArgs('a/b'),
    /Cannot use "a\/b" as a service name; use 1 to 256 characters without slashes/,
  );
  assert.throws(() => scStartArgs(' kubelet'), /as a service name/);
  assert.throws(() => scStartArgs('x'.repeat(257)), /as a service name/);
  assert.throws(
    () => scCreateArgs({ ...kubelet, dependencies: ['containerd/x'] }),
    /Cannot make service "kubelet" depend on "containerd\/x"; name an installed service, without slashes/,
  );
  assert.throws(
    () => scCreateArgs({ ...kubelet, displayName: '' }),
    /Cannot use "" as the display name of service "kubelet"/,
  );
  assert.throws(() => scDescriptionArgs('kubelet', 'two\nlines'), /use one line/);
  assert.throws(
    () => scFailureArgs('kubelet', { restartDelaysMs: [1.5], resetPeriodSeconds: 60 }),
    /Cannot use restart delay "1.5" for service "kubelet"; use whole milliseconds from 0/,
  );
  assert.throws(
    () => scFailureArgs('kubelet', { restartDelaysMs: [], resetPeriodSeconds: -1 }),
    /Cannot use reset period "-1" for service "kubelet"/,
  );
});

test('refuses a command line too long for sc qc to read back', () => {
  const long = {
    ...kubelet,
    args: Array.from({ length: 200 }, (_, i) => `--flag-number-${i}=value`),
  };
  assert.throws(
    () => scCreateArgs(long),
    /Cannot register service "kubelet": its command line \(\d+ characters\) would make its configuration \d+ bytes, more than the 8192 the service manager returns; move arguments into a config file/,
  );
});
