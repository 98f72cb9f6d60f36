import assert from 'node:assert/strict';
import { test } from 'node:test';
import { splitServiceCommandLine } from './command-line.ts';
import { windowsFixture } from './fixtures.ts';
import {
  isServiceControlError,
  parseScConfig,
  parseScFailure,
  parseScStatus,
  serviceControlError,
  win32Error,
} from './sc-output.ts';

test('parses sc queryex of a running service, with its PID', () => {
  assert.deepEqual(parseScStatus(windowsFixture('sc-queryex-kubelet-running.txt')), {
    name: 'kubelet',
    state: 'running',
    pid: 4716,
    win32ExitCode: 0,
    serviceExitCode: 0,
    checkpoint: 0,
    waitHintMs: 0,
  });
});

test('parses sc query, which has no PID line', () => {
  const status = parseScStatus(windowsFixture('sc-query-running.txt'));
  assert.equal(status.name, 'containerd');
  assert.equal(status.state, 'running');
  assert.equal(status.pid, undefined);
});

test('reads exit codes and pending states', () => {
  const crashed = parseScStatus(windowsFixture('sc-queryex-kube-proxy-crashed.txt'));
  assert.equal(crashed.state, 'stopped');
  assert.equal(crashed.win32ExitCode, 1067);
  assert.equal(crashed.pid, undefined, 'PID 0 means no process');

  const never = parseScStatus(windowsFixture('sc-queryex-never-started.txt'));
  assert.equal(never.win32ExitCode, win32Error.serviceNeverStarted);

  const stopping = parseScStatus(windowsFixture('sc-queryex-stop-pending.txt'));
  assert.deepEqual(
    [stopping.state, stopping.pid, stopping.checkpoint, stopping.waitHintMs],
    ['stop-pending', 4716, 1, 5000],
  );

  const starting = parseScStatus(windowsFixture('sc-start-pending.txt'));
  assert.deepEqual(
    [starting.state, starting.pid, starting.waitHintMs],
    ['start-pending', 5128, 2000],
  );

  assert.equal(parseScStatus(windowsFixture('sc-stop-pending.txt')).state, 'stop-pending');
});

test('reads every state number sc.exe prints', () => {
  const running = windowsFixture('sc-query-running.txt');
  const expected = [
    'stopped',
    'start-pending',
    'stop-pending',
    'running',
    'continue-pending',
    'pause-pending',
    'paused',
  ];
  expected.forEach((state, i) => {
    const output = running.replace('4  RUNNING', `${i + 1}  ANY_NAME`);
    assert.equal(parseScStatus(output).state, state);
  });
  assert.throws(
    () => parseScStatus(running.replace('4  RUNNING', '9  STRANGE')),
    /Cannot parse sc.exe query STATE "9": unknown state/,
  );
});

test('parses sc qc: command line verbatim, start type, display name, dependencies', () => {
  const kubelet = parseScConfig(windowsFixture('sc-qc-kubelet.txt'));
  assert.equal(kubelet.name, 'kubelet');
  assert.equal(kubelet.startType, 'auto');
  assert.equal(kubelet.displayName, 'Kubernetes kubelet');
  assert.deepEqual(kubelet.dependencies, ['containerd']);
  assert.equal(kubelet.serviceStartName, 'LocalSystem');
  assert.equal(kubelet.loadOrderGroup, '');
  assert.equal(kubelet.errorControl, 1);
  assert.ok(kubelet.binaryPathName.startsWith('"C:\\k\\kubelet.exe" --windows-service --config='));
  assert.ok(kubelet.binaryPathName.endsWith('--logtostderr=false'));
  const split = splitServiceCommandLine(kubelet.binaryPathName);
  assert.equal(split.binaryPath, 'C:\\k\\kubelet.exe');
  assert.ok(split.args.includes('--register-with-taints=os=windows:NoSchedule'));
});

test('parses delayed auto start and dependencies on continuation lines', () => {
  const proxy = parseScConfig(windowsFixture('sc-qc-kube-proxy.txt'));
  assert.equal(proxy.startType, 'delayed-auto');
  assert.deepEqual(proxy.dependencies, ['kubelet', 'containerd']);
  assert.deepEqual(splitServiceCommandLine(proxy.binaryPathName).args.slice(3, 5), [
    '--proxy-mode=kernelspace',
    '--feature-gates=WinDSR=true,WinOverlay=true',
  ]);
});

test('parses demand start with no dependencies and paths with spaces', () => {
  const containerd = parseScConfig(windowsFixture('sc-qc-containerd.txt'));
  assert.equal(containerd.startType, 'demand');
  assert.deepEqual(containerd.dependencies, []);
  assert.deepEqual(splitServiceCommandLine(containerd.binaryPathName), {
    binaryPath: 'C:\\Program Files\\containerd\\bin\\containerd.exe',
    args: [
      '--config',
      'C:\\Program Files\\containerd\\config.toml',
      '--log-file',
      'C:\\var\\log\\containerd\\containerd.log',
      '--run-service',
    ],
  });
});

test('reads field names, not translated words: a German sc qc', () => {
  const exporter = parseScConfig(windowsFixture('sc-qc-disabled-de.txt'));
  assert.equal(exporter.startType, 'disabled');
  assert.equal(exporter.name, 'windows_exporter');
});

test('refuses driver start types and output without a service', () => {
  const qc = windowsFixture('sc-qc-containerd.txt');
  assert.throws(
    () => parseScConfig(qc.replace('3   DEMAND_START', '1   SYSTEM_START')),
    /Cannot use service "containerd" with START_TYPE "1 {3}SYSTEM_START": boot and system start are for drivers/,
  );
  assert.throws(
    () => parseScConfig(windowsFixture('sc-qc-1060.txt')),
    /Cannot parse sc.exe qc output "\[SC\] OpenService FAILED 1060:.*": no SERVICE_NAME line/s,
  );
  assert.throws(
    () => parseScConfig(qc.replace(/ +DISPLAY_NAME.*\r\n/, '')),
    /Cannot parse sc.exe qc output for "containerd": no DISPLAY_NAME field/,
  );
});

test('parses failures from the [SC] line, whatever the operation', () => {
  const cases: [string, number, string, string][] = [
    [
      'sc-query-1060.txt',
      1060,
      'OpenService',
      'The specified service does not exist as an installed service.',
    ],
    [
      'sc-qc-1060.txt',
      1060,
      'OpenService',
      'The specified service does not exist as an installed service.',
    ],
    ['sc-start-1056.txt', 1056, 'StartService', 'An instance of the service is already running.'],
    ['sc-stop-1062.txt', 1062, 'ControlService', 'The service has not been started.'],
    ['sc-create-1073.txt', 1073, 'CreateService', 'The specified service already exists.'],
    [
      'sc-delete-1072.txt',
      1072,
      'DeleteService',
      'The specified service has been marked for deletion.',
    ],
    ['sc-open-scmanager-5.txt', 5, 'OpenSCManager', 'Access is denied.'],
    [
      'sc-qc-122.txt',
      122,
      'QueryServiceConfig',
      'The data area passed to a system call is too small.',
    ],
  ];
  for (const [name, code, operation, message] of cases) {
    assert.deepEqual(
      parseScFailure(windowsFixture(name), code),
      { operation, code, message },
      name,
    );
  }
});

test('success is decided by the exit code; a failure without an [SC] line keeps the output', () => {
  assert.equal(parseScFailure(windowsFixture('sc-create-success.txt'), 0), undefined);
  assert.equal(parseScFailure(windowsFixture('sc-queryex-kubelet-running.txt'), 0), undefined);
  assert.deepEqual(parseScFailure('', 1639, 'DESCRIPTION:\r\n  bad usage\r\n'), {
    operation: '',
    code: 1639,
    message: 'DESCRIPTION: bad usage',
  });
});

test('an sc.exe failure says what failed, the error, and what to do', () => {
  const failure = parseScFailure(windowsFixture('sc-start-1058.txt'), 1058)!;
  const error = serviceControlError('start service "kubelet"', ['start', 'kubelet'], failure);
  assert.equal(error.code, 'WF_SERVICE_CONTROL');
  assert.deepEqual(error.details, { win32Code: 1058, args: ['start', 'kubelet'] });
  assert.equal(isServiceControlError(error, 1058), true);
  assert.equal(isServiceControlError(error, 1060), false);
  assert.equal(
    error.message,
    'Cannot start service "kubelet": sc.exe start kubelet failed with 1058: The service cannot be started, either because it is disabled or because it has no enabled devices associated with it; its start type is disabled; configure another start type first',
  );
});
