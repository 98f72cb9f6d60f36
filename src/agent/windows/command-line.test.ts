import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  quoteWindowsArgument,
  serviceCommandLine,
  splitServiceCommandLine,
} from './command-line.ts';

test('quotes arguments by the C runtime rules', () => {
  const cases: [string, string][] = [
    ['--v=2', '--v=2'],
    ['C:\\k\\kubelet.exe', 'C:\\k\\kubelet.exe'],
    ['', '""'],
    ['a b', '"a b"'],
    ['tab\there', '"tab\there"'],
    ['say "hi"', '"say \\"hi\\""'],
    ['C:\\Program Files\\', '"C:\\Program Files\\\\"'],
    ['a\\\\"b', '"a\\\\\\\\\\"b"'],
    ['--node-labels=a=b,c=d', '--node-labels=a=b,c=d'],
    ['--enforce-node-allocatable=', '--enforce-node-allocatable='],
  ];
  for (const [arg, quoted] of cases) assert.equal(quoteWindowsArgument(arg), quoted, arg);
});

test('builds a service binPath with the executable always quoted', () => {
  assert.equal(
    serviceCommandLine('C:\\k\\kubelet.exe', [
      '--windows-service',
      '--config=C:\\k\\kubelet-config.yaml',
      '--register-with-taints=os=windows:NoSchedule',
      '--container-runtime-endpoint=npipe://./pipe/containerd-containerd',
      '--system-reserved=cpu=500m,memory=2Gi',
    ]),
    '"C:\\k\\kubelet.exe" --windows-service --config=C:\\k\\kubelet-config.yaml --register-with-taints=os=windows:NoSchedule --container-runtime-endpoint=npipe://./pipe/containerd-containerd --system-reserved=cpu=500m,memory=2Gi',
  );
  assert.equal(
    serviceCommandLine('C:\\Program Files\\containerd\\containerd.exe', [
      '--config',
      'C:\\Program Files\\containerd\\config.toml',
      '--run-service',
    ]),
    '"C:\\Program Files\\containerd\\containerd.exe" --config "C:\\Program Files\\containerd\\config.toml" --run-service',
  );
  assert.equal(serviceCommandLine('C:\\k\\x.exe', []), '"C:\\k\\x.exe"');
  assert.throws(
    () => serviceCommandLine('C:\\k\\"x.exe', []),
    /Cannot use "C:\\k\\"x.exe" as a service executable/,
  );
  assert.throws(() => serviceCommandLine('', []), /as a service executable/);
  assert.throws(() => serviceCommandLine('C:\\x.exe', ['a\0b']), /contains a NUL character/);
});

test('splitting inverts quoting for any argument', () => {
  const args = [
    '',
    'plain',
    'with space',
    'quote"inside',
    'trailing\\',
    'trailing space\\',
    '\\\\server\\share',
    'back\\\\"slash',
    '"',
    '\\',
    'ünïcödé ✓',
    '--a="b c"',
  ];
  const line = serviceCommandLine('C:\\Program Files\\x\\x.exe', args);
  assert.deepEqual(splitServiceCommandLine(line), {
    binaryPath: 'C:\\Program Files\\x\\x.exe',
    args,
  });
});

test('splits command lines as stored by other tools', () => {
  // An unquoted program name ends at the first blank; "" inside quotes is a literal quote.
  assert.deepEqual(splitServiceCommandLine('C:\\Windows\\system32\\svchost.exe -k netsvcs -p'), {
    binaryPath: 'C:\\Windows\\system32\\svchost.exe',
    args: ['-k', 'netsvcs', '-p'],
  });
  assert.deepEqual(splitServiceCommandLine('"C:\\x.exe"  "a ""b"" c"   d\t'), {
    binaryPath: 'C:\\x.exe',
    args: ['a "b" c', 'd'],
  });
  assert.deepEqual(splitServiceCommandLine('"C:\\x.exe'), { binaryPath: 'C:\\x.exe', args: [] });
});
