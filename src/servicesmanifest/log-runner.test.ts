/** The services manifest's logRunner: what it runs, and what a manifest may not make it do. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDocumentError } from '../schema/validator.ts';
import {
  type ManifestService,
  parseServicesManifest,
  type ServicesManifest,
  serviceCommand,
  serviceExecutables,
} from './services-manifest.ts';

const sha = 'a'.repeat(64);
const runner = 'C:\\k\\kube-log-runner.exe';

function manifest(logRunner: unknown): ServicesManifest {
  return {
    version: '1.36.5-wf.2',
    services: [
      {
        name: 'kubelet',
        displayName: 'kubelet',
        binary: 'C:\\k\\kubelet.exe',
        args: ['--v=2'],
        dependencies: [],
        priority: 1,
        bootstrap: true,
        logRunner: logRunner as ManifestService['logRunner'],
      },
    ],
    files: ['kubelet.exe', 'kube-log-runner.exe'].map((name) => ({
      payload: name,
      path: `C:\\k\\${name}`,
      sha256: sha,
    })),
  };
}

function problems(input: unknown): string[] {
  try {
    parseServicesManifest(input);
    return [];
  } catch (error) {
    assert.ok(isDocumentError(error, 'WF_MANIFEST_INVALID'));
    return error.details.problems;
  }
}

test('a service with a log runner runs kube-log-runner.exe with its flags, then the program', () => {
  const parsed = parseServicesManifest(
    manifest({ binary: runner, logFile: 'C:\\k\\logs\\kubelet.log', maxSize: '100M' }),
  );
  const kubelet = parsed.services[0]!;
  assert.deepEqual(serviceCommand(kubelet, ['--v=2']), {
    binaryPath: runner,
    args: [
      '-log-file=C:\\k\\logs\\kubelet.log',
      '-log-file-size=100M',
      'C:\\k\\kubelet.exe',
      '--v=2',
    ],
  });
  assert.deepEqual(serviceExecutables(kubelet), ['C:\\k\\kubelet.exe', runner]);
  const { logRunner: _, ...plain } = kubelet;
  assert.deepEqual(serviceCommand(plain, ['--v=2']), {
    binaryPath: 'C:\\k\\kubelet.exe',
    args: ['--v=2'],
  });
  assert.deepEqual(serviceExecutables(plain), ['C:\\k\\kubelet.exe']);
});

test('a log runner that is not a payload file of the manifest is refused', () => {
  assert.deepEqual(
    problems(manifest({ binary: 'C:\\k\\other.exe', logFile: 'C:\\k\\logs\\kubelet.log' })),
    [
      'services.0.logRunner.binary: "C:\\k\\other.exe" is not the path of a file of this manifest; kube-log-runner.exe must be a payload file with its SHA-256',
    ],
  );
  assert.match(
    problems(
      manifest({ binary: 'C:\\Windows\\evil.exe', logFile: 'C:\\k\\logs\\kubelet.log' }),
    )[0]!,
    /^services\.0\.logRunner\.binary: "C:\\Windows\\evil\.exe" is not inside C:\\k/,
  );
});

test('attacker-side: the log file must be a .log file directly in C:\\k\\logs', () => {
  const refused = (logFile: string) =>
    problems(manifest({ binary: runner, logFile })).join('\n') || 'accepted';
  // Appending a program's output to a system file, an executable or a credential.
  assert.match(refused('C:\\Windows\\System32\\drivers\\etc\\hosts.log'), /is not inside C:\\k/);
  assert.match(refused('C:\\k\\kubelet.exe'), /logFile.*must match pattern|\.log/);
  assert.match(refused('C:\\k\\kubeconfig.log'), /is not a file directly in C:\\k\\logs/);
  assert.match(refused('C:\\k\\pki\\kubelet.log'), /credentials|not a file directly/);
  assert.match(refused('C:\\k\\logs\\..\\kubeconfig.log'), /"\." or "\.\." segment/);
  assert.match(refused('C:\\k\\logs\\sub\\kubelet.log'), /is not a file directly in C:\\k\\logs/);
  assert.match(refused('C:\\k\\logs\\kubelet.log:stream.log'), /alternate data streams/);
  assert.match(refused('C:\\k\\logs\\{{nodeName}}.log'), /logFile/);
  assert.equal(refused('C:\\k\\logs\\kubelet.log'), 'accepted');
});

test('two services may not share a log file, and rotation values are checked', () => {
  const m = manifest({ binary: runner, logFile: 'C:\\k\\logs\\node.log' });
  m.services.push({
    ...m.services[0]!,
    name: 'kube-proxy',
    binary: 'C:\\k\\kubelet.exe',
    priority: 2,
    bootstrap: false,
    logRunner: { binary: runner, logFile: 'C:\\K\\LOGS\\NODE.log' },
  });
  assert.deepEqual(problems(m), [
    'services.1.logRunner.logFile: "C:\\K\\LOGS\\NODE.log" is also the log of service "kubelet"; give each service its own log file',
  ]);
  for (const good of ['100M', '64Mi', '500k', '1G', '2Gi']) {
    assert.deepEqual(
      problems(manifest({ binary: runner, logFile: 'C:\\k\\logs\\kubelet.log', maxSize: good })),
      [],
      good,
    );
  }
  for (const bad of [
    { maxSize: '-1M' },
    { maxSize: '100 M' },
    // Not a Kubernetes quantity suffix (k is; K, KB and MB are not).
    { maxSize: '100K' },
    { maxSize: '100MB' },
    { maxAge: '1d' },
    { maxAge: '0h' },
    { extra: true },
  ]) {
    assert.equal(
      problems(manifest({ binary: runner, logFile: 'C:\\k\\logs\\kubelet.log', ...bad })).length,
      1,
      JSON.stringify(bad),
    );
  }
});
