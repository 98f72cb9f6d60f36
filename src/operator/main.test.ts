import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('./main.ts', import.meta.url));

function operator(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [main, ...args], { timeout: 60_000 }, (error, _stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

test('bad flags are refused with the flag named and the fix', async () => {
  const cases: [string[], RegExp][] = [
    [['--webhook-port', '99999'], /--webhook-port.*"99999" is not a port \(0-65535\)/],
    [['--webhook-url', 'http://127.0.0.1:9443'], /must be https:\/\//],
    [
      ['--webhook-service', 'winfleet/webhook'],
      /is not namespace\/name:port, e\.g\. winfleet-system\/winfleet-webhook:443/,
    ],
    [['--no-such-flag'], /unknown option '--no-such-flag'/],
    [
      ['--webhook-configurations', 'adopt'],
      /--webhook-configurations <mode>' argument 'adopt' is invalid\. Allowed choices are create, patch, none/,
    ],
    [['--pull-secret-namespace', 'Apps'], /"Apps" is not a namespace name/],
    [['--webhook-cert-secret', 'tls_secret'], /"tls_secret" is not a Secret name/],
    [
      ['--no-pull-secrets', '--pull-secret-namespace', 'apps'],
      /give --pull-secret-namespace or --no-pull-secrets, not both/,
    ],
    [
      ['--mode', 'dashboard'],
      /--mode <mode>' argument 'dashboard' is invalid\. Allowed choices are all, controllers, webhook/,
    ],
    [['--mode', 'webhook'], /--mode webhook needs --tls-cert-file and --tls-key-file/],
    [
      ['--mode', 'webhook', '--tls-cert-file', 'a', '--tls-key-file', 'b', '--no-webhook'],
      /--mode webhook and --no-webhook contradict each other/,
    ],
    [['--tls-cert-file', 'a'], /--tls-cert-file and --tls-key-file are for --mode webhook/],
    [['--mode', 'controllers', '--no-webhook'], /--mode controllers is for a webhook served/],
    [
      ['--dashboard-allowed-host', 'http://evil.example:80'],
      /"http:\/\/evil\.example:80" is not a host name or address/,
    ],
  ];
  // Each case is its own process; they start together, since most of each run is Node loading.
  const results = await Promise.all(cases.map(([args]) => operator(args)));
  for (const [i, [args, message]] of cases.entries()) {
    assert.notEqual(results[i]!.code, 0, args.join(' '));
    assert.match(results[i]!.stderr, message);
  }
});

test('the payload flags: a digest is required, the directory and the image exclude each other', async () => {
  const cases: [string[], RegExp][] = [
    // A tag can be moved: the payload is pinned by digest, and the message says how.
    [
      ['--payload-image', '127.0.0.1:5000/winfleet/payload:1.36.5'],
      /--payload-image <reference>' argument .* names no digest; a tag can be moved, so give the payload by digest: "127\.0\.0\.1:5000\/winfleet\/payload@sha256:…", as winfleet payload push prints it/,
    ],
    [
      [
        '--payload-dir',
        '/payload',
        '--payload-image',
        `127.0.0.1:5000/winfleet/payload@sha256:${'a'.repeat(64)}`,
      ],
      /give the payload as --payload-dir or as --payload-image \(a registry artifact\), not both/,
    ],
    [
      ['--payload-pull-secret', 'regcred'],
      /--payload-pull-secret is for a registry payload; give --payload-image too/,
    ],
  ];
  // Apart from the cases above, so that fewer processes start at once on a loaded machine.
  const results = await Promise.all(cases.map(([args]) => operator(args)));
  for (const [i, [args, message]] of cases.entries()) {
    assert.notEqual(results[i]!.code, 0, args.join(' '));
    assert.match(results[i]!.stderr, message);
  }
});

test('a webhook without an endpoint is refused before anything starts', async () => {
  const { code, stderr } = await operator(['--kubeconfig', '/dev/null']);
  assert.notEqual(code, 0);
  assert.match(
    stderr,
    /give --webhook-url \(loopback clusters\) or --webhook-service \(in-cluster\), or --no-webhook/,
  );
});

test('--no-cluster-bindings is documented, and --no-bootstrapper-binding as its alias', async () => {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, [main, '--help'], { timeout: 60_000 }, (error, out) =>
      error ? reject(error) : resolve(out),
    );
  });
  const help = stdout.replace(/\s+/g, ' ');
  assert.match(
    help,
    /--no-cluster-bindings do not apply the ClusterRoleBindings winfleet:node-bootstrapper and winfleet:kube-proxies/,
  );
  assert.match(help, /--no-bootstrapper-binding the same as --no-cluster-bindings/);
});
