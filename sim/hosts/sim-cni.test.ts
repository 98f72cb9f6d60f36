/**
 * The simulated pod network against the real behaviour it models: containerd's CNI directories
 * and config choice, and sdnbridge with host-local allocating from the config's subnet, with
 * host-local's files on the simulated disk.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type AgentConfig,
  agentConfigFrom,
  parseBootstrapConfig,
} from '../../src/agent/agent-config.ts';
import { cniConfig, containerdConfig } from '../../src/agent/node-files.ts';
import { hostPaths } from '../../src/servicesmanifest/host-paths.ts';
import { testBootstrapConfig } from './agent-test-host.ts';
import type { SimMachine } from './machine.ts';
import {
  type CniDirs,
  CniPluginError,
  cniNotInitialized,
  containerdCniDirs,
  containerdConfigFlag,
  containerdDefaultCniDirs,
  flannelDataDir,
  flannelSubnetFile,
  hostLocalAddress,
  loadCniNetwork,
  parseFlannelSubnetEnv,
  parseNetworkConfig,
  reserveHostLocalAddress,
  runtimeNetwork,
  SimCni,
  sandboxIdFor,
} from './sim-cni.ts';
import { SimHostOS } from './sim-host-os.ts';
import { standInBinary } from './stand-in-binary.ts';
import { createTestMachine, serviceConfig } from './test-machine.ts';

const settings: AgentConfig = {
  ...agentConfigFrom(parseBootstrapConfig(testBootstrapConfig())),
  podCIDR: '10.244.0.0/16',
};
const productDirs: CniDirs = { confDir: hostPaths.cniConfigDir, binDirs: [hostPaths.cniBin] };

/** A host as the agent leaves it: containerd's config, the CNI plugins, the node's conflist. */
async function preparedHost(
  t: Parameters<typeof createTestMachine>[0],
  nodePodCIDR: string | undefined,
  options: { plugins?: string[]; address?: string } = {},
): Promise<SimMachine> {
  const machine = await createTestMachine(t, options.address ? { address: options.address } : {});
  await machine.fs.writeFileAtomic(hostPaths.containerdConfig, containerdConfig());
  for (const plugin of options.plugins ?? ['sdnbridge', 'host-local']) {
    await machine.fs.writeFileAtomic(
      `${hostPaths.cniBin}\\${plugin}.exe`,
      standInBinary(plugin, 'v0.3.2'),
    );
  }
  await machine.fs.mkdir(hostPaths.cniConfigDir, { recursive: true });
  if (nodePodCIDR) {
    await machine.fs.writeFileAtomic(hostPaths.cniConfig, cniConfig(settings, nodePodCIDR));
  }
  return machine;
}

async function network(machine: SimMachine) {
  const status = await loadCniNetwork(machine.fs, productDirs);
  assert.ok(status.ready, status.ready ? '' : status.detail);
  return status.network;
}

async function add(machine: SimMachine, podUid: string) {
  return SimCni.of(machine).add({
    network: await network(machine),
    dirs: productDirs,
    containerId: sandboxIdFor(podUid),
  });
}

test('containerd finds the CNI directories in its config file, of each version, or uses its Windows defaults', () => {
  // What the agent writes (version 2, bin_dir migrated to bin_dirs).
  assert.deepEqual(containerdCniDirs(containerdConfig(), hostPaths.containerdConfig), productDirs);
  assert.deepEqual(
    containerdCniDirs(
      "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".cni]\nconf_dir = 'D:\\cni\\conf'\nbin_dirs = ['D:\\cni\\bin', 'E:\\bin']\nbin_dir = 'ignored'\n",
    ),
    { confDir: 'D:\\cni\\conf', binDirs: ['D:\\cni\\bin', 'E:\\bin'] },
  );
  assert.deepEqual(containerdCniDirs("[plugins.cri.cni]\nbin_dir = 'D:\\bin'\n"), {
    confDir: containerdDefaultCniDirs.confDir,
    binDirs: ['D:\\bin'],
  });
  // Version 2 keys under the version 3 plugin name are not read, nor the reverse.
  assert.deepEqual(
    containerdCniDirs(
      'version = 2\n[plugins."io.containerd.cri.v1.runtime".cni]\nconf_dir = \'D:\\x\'\n',
    ),
    containerdDefaultCniDirs,
  );
  assert.deepEqual(containerdCniDirs(undefined), containerdDefaultCniDirs);
  assert.throws(
    () => containerdCniDirs('version = 4\n'),
    /config version equal to or less than `3`, got `4`/,
  );
  assert.throws(
    () => containerdCniDirs('[plugins\n', 'C:\\k\\containerd\\config.toml'),
    /failed to load TOML from C:\\k\\containerd\\config\.toml/,
  );
  assert.equal(containerdConfigFlag(['--run-service', '--config', 'C:\\a.toml']), 'C:\\a.toml');
  assert.equal(containerdConfigFlag(['-c=C:\\b.toml']), 'C:\\b.toml');
  assert.equal(containerdConfigFlag(['--run-service']), undefined);
});

test('without a CNI config the runtime has no pod network; the first file in byte order is the network, an invalid one included', async (t) => {
  const machine = await preparedHost(t, undefined);
  const none = await loadCniNetwork(machine.fs, productDirs);
  assert.equal(none.ready, false);
  assert.equal(none.ready ? '' : none.message, cniNotInitialized);
  assert.match(none.ready ? '' : none.detail, /no network config found in C:\\k\\cni\\config/);
  const missingDir = await loadCniNetwork(machine.fs, { ...productDirs, confDir: 'C:\\nowhere' });
  assert.equal(missingDir.ready, false);

  await machine.fs.writeFileAtomic(`${hostPaths.cniConfigDir}\\notes.txt`, 'not a config');
  await machine.fs.writeFileAtomic(hostPaths.cniConfig, cniConfig(settings, '10.244.1.0/24'));
  // "10-…" sorts before "9-…" byte-wise, as Go's sort.Strings does.
  await machine.fs.writeFileAtomic(
    `${hostPaths.cniConfigDir}\\9-other.conf`,
    JSON.stringify({ cniVersion: '1.0.0', name: 'other', type: 'sdnbridge' }),
  );
  const loaded = await network(machine);
  assert.equal(loaded.file, hostPaths.cniConfig);
  assert.equal(loaded.name, 'winfleet');
  assert.equal(loaded.plugins[0]!.name, 'winfleet', 'libcni injects the list name');

  // An invalid first file: no network, even with a valid one after it.
  await machine.fs.writeFileAtomic(`${hostPaths.cniConfigDir}\\00-broken.conflist`, '{"name":');
  const broken = await loadCniNetwork(machine.fs, productDirs);
  assert.equal(broken.ready, false);
  assert.match(broken.ready ? '' : broken.detail, /00-broken\.conflist.*invalid cni config/);
  await machine.fs.writeFileAtomic(
    `${hostPaths.cniConfigDir}\\00-broken.conflist`,
    JSON.stringify({ cniVersion: '1.0.0', name: 'x', plugins: [] }),
  );
  assert.equal((await loadCniNetwork(machine.fs, productDirs)).ready, false);
});

test('sdnbridge with host-local hands out the node subnet from .2, round robin, and keeps host-local’s files', async (t) => {
  const machine = await preparedHost(t, '10.244.7.0/24');
  const first = await add(machine, 'pod-a');
  const second = await add(machine, 'pod-b');
  assert.deepEqual(first, {
    ip: '10.244.7.2',
    cidr: '10.244.7.2/24',
    gateway: '10.244.7.1',
    network: 'winfleet',
  });
  assert.equal(second.ip, '10.244.7.3');
  const dir = 'C:\\var\\lib\\cni\\networks\\winfleet';
  assert.equal(
    (await machine.fs.readFile(`${dir}\\10.244.7.2`)).toString(),
    `${sandboxIdFor('pod-a')}\r\neth0`,
  );
  assert.equal((await machine.fs.readFile(`${dir}\\last_reserved_ip.0`)).toString(), '10.244.7.3');
  assert.ok(await machine.fs.stat(`${dir}\\lock`));
  // The HNS network the config names, created on first use as an L2Bridge with the subnet.
  const [hns] = machine.hns.list();
  assert.equal(hns?.name, 'winfleet');
  assert.equal(hns?.type, 'L2Bridge');
  assert.deepEqual(machine.hns.subnets(hns!.id), [
    { addressPrefix: '10.244.7.0/24', gateway: '10.244.7.1' },
  ]);
  // Each sandbox has its endpoint on it: its address answers.
  assert.deepEqual(
    machine.hns.endpoints().map((e) => [e.ip, e.networkId, e.containerId]),
    [
      ['10.244.7.2', hns!.id, sandboxIdFor('pod-a')],
      ['10.244.7.3', hns!.id, sandboxIdFor('pod-b')],
    ],
  );
  assert.ok(machine.hns.answers('10.244.7.2'));

  // Released addresses are reused only after the rest of the range (round robin).
  const cni = SimCni.of(machine);
  await cni.del({
    network: await network(machine),
    dirs: productDirs,
    containerId: sandboxIdFor('pod-a'),
  });
  assert.equal(await machine.fs.stat(`${dir}\\10.244.7.2`), undefined);
  assert.equal(await hostLocalAddress(machine.fs, 'winfleet', sandboxIdFor('pod-a')), undefined);
  assert.equal(machine.hns.answers('10.244.7.2'), false, 'CNI DEL removed its endpoint');
  assert.equal((await add(machine, 'pod-c')).ip, '10.244.7.4');
  // A second ADD for the same sandbox is refused, as host-local does.
  await assert.rejects(add(machine, 'pod-b'), (error: Error) => {
    assert.ok(error instanceof CniPluginError);
    assert.match(
      error.message,
      /^plugin type="sdnbridge" name="winfleet" failed \(add\): 10\.244\.7\.3 has been allocated to [0-9a-f]{64}, duplicate allocation is not allowed$/,
    );
    return true;
  });
});

test('a full subnet, a missing plugin and an ipam sdnbridge does not pass on fail the sandbox with the plugin’s error', async (t) => {
  const small = await preparedHost(t, '10.244.8.0/30');
  assert.equal((await add(small, 'one')).ip, '10.244.8.2');
  await assert.rejects(
    add(small, 'two'),
    /no IP addresses available in range set: 10\.244\.8\.1-10\.244\.8\.2/,
  );

  const noHostLocal = await preparedHost(t, '10.244.9.0/24', { plugins: ['sdnbridge'] });
  await assert.rejects(
    add(noHostLocal, 'x'),
    /failed \(add\): failed to find plugin "host-local" in path \[C:\\k\\cni\\bin\]/,
  );
  const none = await preparedHost(t, '10.244.9.0/24', { plugins: [] });
  await assert.rejects(add(none, 'x'), /failed to find plugin "sdnbridge" in path/);

  // sdnbridge re-serializes its own IpamConfig: host-local never sees `ranges`.
  const ranges = await preparedHost(t, undefined);
  await ranges.fs.writeFileAtomic(
    hostPaths.cniConfig,
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'winfleet',
      plugins: [
        {
          type: 'sdnbridge',
          ipam: { type: 'host-local', ranges: [[{ subnet: '10.244.9.0/24' }]] },
        },
      ],
    }),
  );
  await assert.rejects(add(ranges, 'x'), /failed \(add\): no IP ranges specified/);
  await ranges.fs.writeFileAtomic(
    hostPaths.cniConfig,
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'winfleet',
      plugins: [{ type: 'sdnbridge', ipam: { type: 'host-local', subnet: '10.244.9.7/24' } }],
    }),
  );
  await assert.rejects(
    add(ranges, 'x'),
    /Network has host bits set\. For a subnet mask of length 24 the network address is 10\.244\.9\.0/,
  );
});

test('two hosts with their own pod CIDRs give unique IPs; the cluster-wide CIDR on both gives the same ones', async (t) => {
  const a = await preparedHost(t, '10.244.1.0/24');
  const b = await preparedHost(t, '10.244.2.0/24', { address: '127.0.0.201' });
  const ips = [];
  for (const [machine, uid] of [
    [a, 'a1'],
    [b, 'b1'],
    [a, 'a2'],
    [b, 'b2'],
  ] as const) {
    ips.push((await add(machine, uid)).ip);
  }
  assert.deepEqual(ips, ['10.244.1.2', '10.244.2.2', '10.244.1.3', '10.244.2.3']);

  // What every node had before the fix: host-local over 10.244.0.0/16 on each.
  const wideConfig = JSON.stringify({
    cniVersion: '1.0.0',
    name: 'winfleet',
    plugins: [{ type: 'sdnbridge', ipam: { type: 'host-local', subnet: '10.244.0.0/16' } }],
  });
  const c = await preparedHost(t, undefined);
  const d = await preparedHost(t, undefined, { address: '127.0.0.201' });
  for (const m of [c, d]) await m.fs.writeFileAtomic(hostPaths.cniConfig, wideConfig);
  assert.equal((await add(c, 'c1')).ip, (await add(d, 'd1')).ip);
});

test('the runtime network is read from the running containerd’s --config', async (t) => {
  const machine = await preparedHost(t, '10.244.3.0/24');
  assert.equal(await runtimeNetwork(machine), undefined, 'no containerd runs');
  await machine.fs.writeFileAtomic(
    'C:\\k\\containerd\\containerd.exe',
    standInBinary('containerd', 'v2.4.2'),
  );
  const os = new SimHostOS(machine);
  await os.createService(
    serviceConfig('containerd', {
      binaryPath: 'C:\\k\\containerd\\containerd.exe',
      args: ['--run-service', '--config', hostPaths.containerdConfig],
    }),
  );
  await os.startService('containerd');
  const running = await runtimeNetwork(machine);
  assert.deepEqual(running?.dirs, productDirs);
  assert.equal(running?.status.ready, true);
});

/** flannel's conflist as winfleet writes it for flannel-vxlan, with its plugins on the host. */
async function flannelHost(
  t: Parameters<typeof createTestMachine>[0],
  subnetEnv?: string,
  cniVersion = '0.4.0',
) {
  const machine = await createTestMachine(t);
  for (const plugin of ['flannel', 'win-overlay', 'host-local'])
    await machine.fs.writeFileAtomic(
      `${hostPaths.cniBin}\\${plugin}.exe`,
      standInBinary(plugin, 'v1.9.1'),
    );
  if (subnetEnv !== undefined) {
    await machine.fs.mkdir('C:\\run\\flannel', { recursive: true });
    await machine.fs.writeFileAtomic(flannelSubnetFile, subnetEnv);
  }
  const conf = parseNetworkConfig(
    JSON.stringify({
      cniVersion,
      name: 'flannel.4096',
      plugins: [{ type: 'flannel', delegate: { type: 'win-overlay', apiVersion: 2 } }],
    }),
    'C:\\k\\cni\\config\\10-winfleet.conflist',
  );
  const request = (pod: string) => ({
    network: conf,
    dirs: productDirs,
    containerId: sandboxIdFor(pod),
  });
  return { machine, request, cni: SimCni.of(machine) };
}

const subnetEnvText =
  'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n';

test('flannel delegating to win-overlay: the subnet file’s subnet, the Overlay network flanneld made, and DEL', async (t) => {
  const { machine, request, cni } = await flannelHost(t, subnetEnvText);
  // Before flanneld made its network: win-overlay's own error.
  await assert.rejects(cni.add(request('pod-a')), {
    message:
      'plugin type="win-overlay" name="flannel.4096" failed (add): error while GETHNSNewtorkByName(flannel.4096): Network name "flannel.4096" not found',
  });
  const overlay = machine.hns.ensure(
    'flannel.4096',
    'Overlay',
    [{ addressPrefix: '10.244.3.0/24', gateway: '10.244.3.1' }],
    { vsid: 4096, managementIp: machine.address },
  );
  const a = await cni.add(request('pod-a'));
  assert.deepEqual(a, {
    ip: '10.244.3.2',
    cidr: '10.244.3.2/24',
    gateway: '10.244.3.1',
    network: 'flannel.4096',
  });
  assert.deepEqual(
    machine.hns.endpoints().map((e) => [e.ip, e.networkId]),
    [['10.244.3.2', overlay.id]],
  );
  // The delegate's config is kept for DEL, as flannel's data directory holds it.
  const scratch = `${flannelDataDir}\\${sandboxIdFor('pod-a')}`;
  assert.deepEqual(JSON.parse((await machine.fs.readFile(scratch)).toString()), {
    type: 'win-overlay',
    apiVersion: 2,
    name: 'flannel.4096',
    ipMasq: false,
    ipMasqNetwork: '10.244.0.0/16',
    cniVersion: '0.4.0',
    ipam: { type: 'host-local', subnet: '10.244.3.0/24' },
  });
  await cni.del(request('pod-a'));
  assert.deepEqual(machine.hns.endpoints(), []);
  assert.equal(await machine.fs.stat(scratch), undefined);
  await cni.del(request('pod-a')); // again: nothing left, no error (the CNI spec)
});

test('flannel without its subnet file, or with an L2Bridge network of that name, fails as the plugins do', async (t) => {
  // v0.9.1 returns os.Open's and loadFlannelSubnetEnv's errors as they are (flannel-io/cni-plugin
  // later wrapped them in "failed to load flannel 'subnet.env' file: …").
  const missing = await flannelHost(t);
  await assert.rejects(missing.cni.add(missing.request('pod-a')), {
    message:
      'plugin type="flannel" name="flannel.4096" failed (add): open C:\\run\\flannel\\subnet.env: The system cannot find the path specified.',
  });
  await missing.machine.fs.mkdir('C:\\run\\flannel', { recursive: true });
  await assert.rejects(missing.cni.add(missing.request('pod-a')), {
    message:
      'plugin type="flannel" name="flannel.4096" failed (add): open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.',
  });
  const partial = await flannelHost(t, 'FLANNEL_NETWORK=10.244.0.0/16\n');
  await assert.rejects(partial.cni.add(partial.request('pod-a')), {
    message:
      'plugin type="flannel" name="flannel.4096" failed (add): C:\\run\\flannel\\subnet.env is missing FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET, FLANNEL_MTU, FLANNEL_IPMASQ',
  });
  const bridged = await flannelHost(t, subnetEnvText);
  bridged.machine.hns.ensure('flannel.4096', 'L2Bridge');
  await assert.rejects(
    bridged.cni.add(bridged.request('pod-a')),
    /win-overlay.*network flannel\.4096 is of an unexpected type: L2Bridge/,
  );
});

test('flannel.exe v0.9.1 refuses a config of a CNI version it does not support, ADD and DEL', async (t) => {
  // As flannel.exe answered under Wine to a conflist of cniVersion 1.0.0.
  const supports = 'plugin supports ["0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0"]';
  const host = await flannelHost(t, subnetEnvText, '1.0.0');
  await assert.rejects(host.cni.add(host.request('pod-a')), {
    message: `plugin type="flannel" name="flannel.4096" failed (add): incompatible CNI versions; config is "1.0.0", ${supports}`,
  });
  await assert.rejects(host.cni.del(host.request('pod-a')), {
    message: `plugin type="flannel" name="flannel.4096" failed (delete): incompatible CNI versions; config is "1.0.0", ${supports}`,
  });
});

test('subnet.env is read as flannel’s plugin v0.9.1 reads it: one network, the subnet without its host bits', () => {
  const env = parseFlannelSubnetEnv(subnetEnvText);
  assert.equal(env.subnet.network, env.subnet.address);
  assert.equal(env.subnet.prefix, 24);
  assert.equal(env.network.prefix, 16);
  assert.equal(env.mtu, 1450);
  assert.equal(env.ipMasq, false);
  // FLANNEL_NETWORK is one net.ParseCIDR; keys and values are not trimmed.
  assert.throws(() => parseFlannelSubnetEnv(subnetEnvText.replace('/16', '/16,10.245.0.0/16')), {
    message: 'invalid CIDR address: 10.244.0.0/16,10.245.0.0/16',
  });
  assert.throws(
    () => parseFlannelSubnetEnv(subnetEnvText.replace('FLANNEL_MTU=', 'FLANNEL_MTU= ')),
    {
      message: 'strconv.ParseUint: parsing " 1450": invalid syntax',
    },
  );
  assert.deepEqual(parseFlannelSubnetEnv(subnetEnvText.replaceAll('\n', '\r\n')), env);
});

test('flannel delegating to win-bridge (host-gw): the L2Bridge network, gateway .2, the bridge endpoint’s reserved .2 skipped', async (t) => {
  const machine = await createTestMachine(t);
  for (const plugin of ['flannel', 'win-bridge', 'host-local'])
    await machine.fs.writeFileAtomic(
      `${hostPaths.cniBin}\\${plugin}.exe`,
      standInBinary(plugin, 'v1.9.1'),
    );
  await machine.fs.mkdir('C:\\run\\flannel', { recursive: true });
  await machine.fs.writeFileAtomic(flannelSubnetFile, subnetEnvText);
  const conf = parseNetworkConfig(
    JSON.stringify({
      cniVersion: '0.4.0',
      name: 'cbr0',
      plugins: [{ type: 'flannel', delegate: { type: 'win-bridge', apiVersion: 2 } }],
    }),
    'C:\\k\\cni\\config\\10-winfleet.conflist',
  );
  const request = (pod: string) => ({
    network: conf,
    dirs: productDirs,
    containerId: sandboxIdFor(pod),
  });
  const cni = SimCni.of(machine);
  // An Overlay network of that name is not one win-bridge takes.
  const overlay = machine.hns.ensure('cbr0', 'Overlay');
  await assert.rejects(
    cni.add(request('pod-a')),
    /win-bridge.*network cbr0 is of an unexpected type: Overlay/,
  );
  machine.hns.remove(overlay.id);
  const bridge = machine.hns.ensure('cbr0', 'L2Bridge', [
    { addressPrefix: '10.244.3.0/24', gateway: '10.244.3.1' },
  ]);
  machine.hns.createHostEndpoint(bridge.id, 'cbr0_ep', '10.244.3.2');
  // The agent's reservation of .2 (bridge-endpoint.ts) keeps it from host-local's pods.
  assert.equal(
    await reserveHostLocalAddress(machine.fs, {
      network: 'cbr0',
      subnet: '10.244.3.0/24',
      containerId: 'winfleet-bridge-endpoint',
      address: '10.244.3.2',
    }),
    '10.244.3.2',
  );
  const a = await cni.add(request('pod-a'));
  assert.deepEqual(a, {
    ip: '10.244.3.3',
    cidr: '10.244.3.3/24',
    gateway: '10.244.3.2',
    network: 'cbr0',
  });
  assert.equal(machine.hns.findEndpoint('cbr0_ep')?.ip, '10.244.3.2');
  await cni.del(request('pod-a'));
  // DEL removes the pod's endpoint, never the host's.
  assert.deepEqual(
    machine.hns.endpoints().map((e) => e.name),
    ['cbr0_ep'],
  );
});
