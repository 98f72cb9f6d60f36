import assert from 'node:assert/strict';
import { test } from 'node:test';
import { servicesManifestFor } from '../../src/payload/node-services.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { expandArgument } from '../../src/servicesmanifest/services-manifest.ts';
import { FlagError } from './flag-lists.ts';
import { hnsProtocol } from './hns-networks.ts';
import {
  kubeProxyStatus,
  readKubeProxyFlags,
  validateKubeProxyFlags,
} from './kube-proxy-standin.ts';
import type { SimMachine } from './machine.ts';
import { standInBinary } from './stand-in-binary.ts';
import { createTestMachine } from './test-machine.ts';

/** kube-proxy's arguments in the manifest the operator publishes, with a node's values. */
function manifestArgs(): string[] {
  const manifest = servicesManifestFor({
    version: '1.36.5-wf.1',
    kubernetesVersion: 'v1.36.5',
    files: ['kube-proxy.exe', 'kube-log-runner.exe'].map((name) => ({
      name,
      version: 'v1.36.5',
      sha256: '0'.repeat(64),
      source: { path: name },
    })),
  });
  const values = { nodeName: 'win-a', podCIDR: '10.244.0.0/16' } as Parameters<
    typeof expandArgument
  >[1];
  return manifest.services
    .find((s) => s.name === 'kube-proxy')!
    .args.map((a) => expandArgument(a, values));
}

test('the manifest’s flags parse and validate', () => {
  const flags = readKubeProxyFlags(manifestArgs());
  assert.deepEqual(flags, {
    windowsService: true,
    kubeconfig: hostPaths.kubeProxyKubeconfig,
    hostnameOverride: 'win-a',
    proxyMode: 'kernelspace',
    networkName: 'winfleet',
    clusterCidr: '10.244.0.0/16',
    // The routed network is an L2Bridge one: no source VIP (winkernel wants it on Overlay only).
    sourceVip: undefined,
    verbosity: 2,
    warnings: [],
  });
  assert.deepEqual(validateKubeProxyFlags(flags), []);
});

test('flags parse as pflag does: values after a space, "_" for "-", -v, Go booleans', () => {
  const flags = readKubeProxyFlags([
    '--network_name',
    'cbr0',
    '-v=4',
    '--windows-service=false',
    '--feature-gates=WinDSR=true',
  ]);
  assert.equal(flags.networkName, 'cbr0');
  assert.equal(flags.verbosity, 4);
  assert.equal(flags.windowsService, false);
  // strconv.ParseBool's other spellings, as pflag accepts them; the last one given wins.
  assert.equal(readKubeProxyFlags(['--windows-service=1']).windowsService, true);
  assert.equal(readKubeProxyFlags(['--windows-service=T']).windowsService, true);
  assert.equal(
    readKubeProxyFlags(['--windows-service', '--windows-service=F']).windowsService,
    false,
  );
  assert.equal(readKubeProxyFlags([]).windowsService, false);
  assert.throws(
    () => readKubeProxyFlags(['--windows-service=yes']),
    (error: Error) =>
      error instanceof FlagError &&
      error.message ===
        'invalid argument "yes" for "--windows-service" flag: strconv.ParseBool: parsing "yes": invalid syntax',
  );
  assert.throws(
    () => readKubeProxyFlags(['--v=two']),
    (error: Error) =>
      error instanceof FlagError &&
      error.message ===
        'invalid argument "two" for "-v, --v" flag: strconv.ParseInt: parsing "two": invalid syntax',
  );
  assert.throws(
    () => readKubeProxyFlags(['--kubeconfig']),
    (error: Error) =>
      error instanceof FlagError && error.message === 'flag needs an argument: --kubeconfig',
  );
  assert.throws(
    () => readKubeProxyFlags(['--no-such-flag=1']),
    (error: Error) =>
      error instanceof FlagError && error.message === 'unknown flag: --no-such-flag',
  );
  assert.throws(
    () => readKubeProxyFlags(['run', 'now']),
    (error: Error) =>
      error instanceof FlagError &&
      error.message === '"kube-proxy" does not take any arguments, got ["run" "now"]',
  );
});

test('a proxy mode other than kernelspace and a bad cluster CIDR fail validation with the real messages', () => {
  assert.deepEqual(
    validateKubeProxyFlags(
      readKubeProxyFlags(['--proxy-mode=iptables', '--cluster-cidr=10.244.0.0/33']),
    ),
    [
      `KubeProxyConfiguration.Mode.ProxyMode: Invalid value: "iptables": must be kernelspace or blank (blank means the most-available proxy [currently 'kernelspace'])`,
      'KubeProxyConfiguration.DetectLocalConfiguration.ClusterCIDRs[0]: Invalid value: "10.244.0.0/33": must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)',
    ],
  );
  assert.equal(
    validateKubeProxyFlags(readKubeProxyFlags(['--cluster-cidr=10.0.0.0/8,fd00::/48'])).length,
    0,
  );
  // ParseCIDRSloppy: leading zeros in octets and prefix are accepted; 256 is not an octet.
  assert.deepEqual(
    validateKubeProxyFlags(readKubeProxyFlags(['--cluster-cidr=010.244.000.0/016'])),
    [],
  );
  assert.equal(
    validateKubeProxyFlags(readKubeProxyFlags(['--cluster-cidr=10.256.0.0/16'])).length,
    1,
  );
});

/** Runs C:\k\kube-proxy.exe with `args` as an SSH command would; resolves with its exit. */
async function runKubeProxy(machine: SimMachine, args: string[]) {
  await machine.fs.writeFileAtomic('C:\\k\\kube-proxy.exe', standInBinary('kube-proxy', 'v1.36.5'));
  const stdout: string[] = [];
  const stderr: string[] = [];
  const process = await machine.spawn({
    binaryPath: 'C:\\k\\kube-proxy.exe',
    args,
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
  });
  const exit = await process.exited;
  return { code: exit.code, stdout: stdout.join(''), stderr: stderr.join('') };
}

test('kube-proxy exits 1 with the real error when its kubeconfig is missing, when it has none, or a flag is bad', async (t) => {
  const machine = await createTestMachine(t);
  const missing = await runKubeProxy(machine, [
    `--kubeconfig=${hostPaths.kubeProxyKubeconfig}`,
    '--network-name=winfleet',
  ]);
  assert.equal(missing.code, 1);
  assert.match(
    missing.stderr,
    /"Error running ProxyServer" err="GetFileAttributesEx C:\\k\\kube-proxy\.kubeconfig: The system cannot find the file specified\."/,
  );
  assert.match(missing.stderr, /"command failed" err="GetFileAttributesEx/);

  const none = await runKubeProxy(machine, ['--network-name=winfleet']);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined/);

  const badFlag = await runKubeProxy(machine, ['--v=x']);
  assert.equal(badFlag.code, 1);
  assert.match(badFlag.stderr, /^Error: invalid argument "x" for "-v, --v" flag/);

  const badMode = await runKubeProxy(machine, ['--proxy-mode=userspace']);
  assert.equal(badMode.code, 1);
  assert.match(
    badMode.stderr,
    /"command failed" err="failed validate: KubeProxyConfiguration\.Mode/,
  );
  assert.doesNotMatch(badMode.stderr, /Error running ProxyServer/, 'validation comes first');
  assert.equal(kubeProxyStatus(machine)?.phase, 'exited');
});

test('HNS load balancers live on an existing network and go with it', async (t) => {
  const machine = await createTestMachine(t);
  const fields = {
    frontendVips: ['10.96.0.20'],
    protocol: hnsProtocol.TCP,
    externalPort: 80,
    internalPort: 8080,
    endpoints: ['10.244.1.5'],
  };
  assert.throws(
    () => machine.hns.createLoadBalancer({ ...fields, networkId: 'NOPE' }),
    /HNS network NOPE not found/,
  );
  const network = machine.hns.ensure('winfleet', 'L2Bridge');
  const other = machine.hns.ensure('nat', 'NAT');
  const lb = machine.hns.createLoadBalancer({ ...fields, networkId: network.id });
  machine.hns.createLoadBalancer({ ...fields, networkId: other.id });
  assert.deepEqual(machine.hns.loadBalancers()[0], lb);
  assert.equal(machine.hns.find('WINFLEET')?.id, network.id, 'names are case-insensitive');
  machine.hns.remove(network.id);
  assert.deepEqual(
    machine.hns.loadBalancers().map((l) => l.networkId),
    [other.id],
  );
  machine.hns.removeAllLoadBalancers();
  assert.deepEqual(machine.hns.loadBalancers(), []);
});
