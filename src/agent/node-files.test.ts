/**
 * The CNI config against windows-container-networking's own sdnbridge examples (v0.3.2, the
 * version the payload builds: example/l2bridge.conf and example/flannel_l2bridge.conf) and
 * against what sdnbridge and host-local read from it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { testBootstrapConfig } from '../../sim/hosts/agent-test-host.ts';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { servicesManifestFor } from '../payload/node-services.ts';
import { cniNetworkName } from '../servicesmanifest/host-paths.ts';
import { type AgentConfig, agentConfigFrom, parseBootstrapConfig } from './agent-config.ts';
import {
  cniConfig,
  flannelCniConfig,
  flannelHostGwCniConfig,
  kubeletConfiguration,
  nodePodSubnet,
} from './node-files.ts';

const settings: AgentConfig = {
  ...agentConfigFrom(parseBootstrapConfig(testBootstrapConfig())),
  nodeIP: '192.0.2.15',
  podCIDR: '10.244.0.0/16',
  serviceCIDR: '10.96.0.0/12',
  clusterDNS: '10.96.0.10',
};

interface Plugin {
  type: string;
  ipam: Record<string, unknown>;
  AdditionalArgs: { Name: string; Value: { Type: string; Settings: Record<string, unknown> } }[];
  [key: string]: unknown;
}

function plugin(text: string): Plugin {
  const list = JSON.parse(text) as { cniVersion: string; name: string; plugins: Plugin[] };
  assert.equal(list.name, cniNetworkName);
  assert.equal(list.plugins.length, 1);
  return list.plugins[0]!;
}

test('the conflist uses the node’s own pod CIDR with the endpoint policies of the sdnbridge examples', () => {
  const sdnbridge = plugin(cniConfig(settings, '10.244.7.0/24'));
  assert.equal(sdnbridge.type, 'sdnbridge');
  // The node's subnet, and its first address as the gateway (host-local keeps it out of the pool).
  assert.deepEqual(sdnbridge.ipam, {
    type: 'host-local',
    subnet: '10.244.7.0/24',
    routes: [{ dst: '0.0.0.0/0', gw: '10.244.7.1' }],
  });
  // flannel_l2bridge.conf: OutBoundNAT except the cluster and service CIDRs; SDNRoute with
  // NeedEncap for the service CIDR and for the node IP /32 (l2bridge.conf has the same three).
  assert.deepEqual(sdnbridge.AdditionalArgs, [
    {
      Name: 'EndpointPolicy',
      Value: { Type: 'OutBoundNAT', Settings: { Exceptions: ['10.244.0.0/16', '10.96.0.0/12'] } },
    },
    {
      Name: 'EndpointPolicy',
      Value: { Type: 'SDNRoute', Settings: { DestinationPrefix: '10.96.0.0/12', NeedEncap: true } },
    },
    {
      Name: 'EndpointPolicy',
      Value: {
        Type: 'SDNRoute',
        Settings: { DestinationPrefix: '192.0.2.15/32', NeedEncap: true },
      },
    },
  ]);
  assert.deepEqual(sdnbridge.dns, { Nameservers: ['10.96.0.10'], Search: ['svc.cluster.local'] });
});

test('every field written is one sdnbridge v0.3.2 reads; ipam holds only what it passes host-local', () => {
  const sdnbridge = plugin(cniConfig(settings, '10.244.7.0/24'));
  // cni/cni.go NetworkConfig (json names, matched case-insensitively by Go) plus libcni's
  // capabilities; "ROUTE" policies are the HNS v1 API of win-bridge, not sdnbridge's.
  const networkConfigFields = [
    'cniversion',
    'name',
    'type',
    'ipam',
    'dns',
    'optionalflags',
    'runtimeconfig',
    'additionalroutes',
    'additionalargs',
    'capabilities',
  ];
  for (const key of Object.keys(sdnbridge)) {
    assert.ok(networkConfigFields.includes(key.toLowerCase()), `sdnbridge ignores "${key}"`);
  }
  // IpamConfig: sdnbridge re-serializes it for host-local, dropping anything else (ranges,
  // rangeStart, gateway, dataDir would silently vanish).
  const ipamFields = [
    'type',
    'environment',
    'addressspace',
    'subnet',
    'ipaddress',
    'queryinterval',
    'routes',
  ];
  for (const key of Object.keys(sdnbridge.ipam)) {
    assert.ok(ipamFields.includes(key.toLowerCase()), `sdnbridge drops ipam.${key}`);
  }
  for (const policy of sdnbridge.AdditionalArgs) {
    // Only names containing "Policy" are applied; HNS v2 EndpointPolicy types.
    assert.equal(policy.Name, 'EndpointPolicy');
    assert.ok(['OutBoundNAT', 'SDNRoute'].includes(policy.Value.Type), policy.Value.Type);
  }
});

test('two nodes with different pod CIDRs get different subnets and gateways', () => {
  const a = plugin(cniConfig(settings, '10.244.1.0/24')).ipam;
  const b = plugin(cniConfig(settings, '10.244.2.0/24')).ipam;
  assert.equal(a.subnet, '10.244.1.0/24');
  assert.equal(b.subnet, '10.244.2.0/24');
  assert.notDeepEqual(a.routes, b.routes);
  // Never the cluster-wide CIDR, which every node would share.
  assert.notEqual(a.subnet, settings.podCIDR);
});

test('a pod CIDR that is not this cluster’s IPv4 network is refused, naming the field and the fix', () => {
  assert.deepEqual(nodePodSubnet(settings, '10.244.255.0/24'), {
    cidr: '10.244.255.0/24',
    gateway: '10.244.255.1',
  });
  const cases: [string, RegExp][] = [
    [
      '10.245.0.0/24',
      /outside the cluster pod CIDR 10\.244\.0\.0\/16 \(hosts\.podCIDR\); set hosts\.podCIDR/,
    ],
    ['10.0.0.0/8', /outside the cluster pod CIDR/],
    ['10.244.1.5/24', /not an IPv4 network of \/30 or larger/],
    ['10.244.1.0/31', /not an IPv4 network/],
    ['fd00::/64', /not an IPv4 network/],
    ['10.244.1.0/24","x":"', /not an IPv4 network/],
    ['', /not an IPv4 network/],
  ];
  for (const [cidr, message] of cases) {
    assert.throws(() => cniConfig(settings, cidr), message, cidr);
  }
  assert.throws(
    () => cniConfig({ ...settings, podCIDR: 'ten' }, '10.244.1.0/24'),
    /hosts\.podCIDR\) "ten" is not an IPv4 CIDR/,
  );
});

test('flannel’s config is one flannel.exe v0.9.1 takes, reading the subnet file flanneld writes', async (t) => {
  const list = JSON.parse(flannelCniConfig(settings, 4096)) as {
    cniVersion: string;
    name: string;
    plugins: Record<string, unknown>[];
  };
  // What the payload's flannel.exe (containernetworking/plugins v0.9.1) answers to
  // CNI_COMMAND=VERSION, run under Wine: any other version is "incompatible CNI versions".
  assert.ok(['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0'].includes(list.cniVersion));
  assert.equal(list.name, 'flannel.4096');
  const flannel = list.plugins[0]!;
  assert.equal(flannel.type, 'flannel');
  // Its defaults (/run/flannel/subnet.env, /var/lib/cni/flannel) are on the current drive;
  // winfleet names the drive, and gives flanneld the same file.
  assert.equal(flannel.subnetFile, 'C:\\run\\flannel\\subnet.env');
  assert.equal(flannel.dataDir, 'C:\\var\\lib\\cni\\flannel');
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-node-files-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const manifest = servicesManifestFor(await writeStandInPayload(dir), {
    network: { mode: 'flannel-vxlan', vni: 4096, netConf: '{}' },
  });
  const flanneld = manifest.services.find((s) => s.name === 'flanneld')!;
  assert.ok(flanneld.args.includes(`--subnet-file=${flannel.subnetFile}`));
  // flannel names the delegate and gives it host-local itself; a delegate with either is refused.
  const delegate = flannel.delegate as Record<string, unknown>;
  assert.equal(delegate.type, 'win-overlay');
  assert.equal('name' in delegate || 'ipam' in delegate, false);
});

test('flannel host-gw’s config: flannel delegating to win-bridge on cbr0 with the l2bridge endpoint policies', () => {
  const list = JSON.parse(flannelHostGwCniConfig(settings, 'cbr0')) as {
    cniVersion: string;
    name: string;
    plugins: Record<string, unknown>[];
  };
  assert.equal(list.cniVersion, '0.4.0');
  assert.equal(list.name, 'cbr0');
  assert.equal(list.plugins.length, 1);
  const flannel = list.plugins[0]!;
  assert.equal(flannel.type, 'flannel');
  assert.equal(flannel.subnetFile, 'C:\\run\\flannel\\subnet.env');
  assert.equal(flannel.dataDir, 'C:\\var\\lib\\cni\\flannel');
  assert.deepEqual(flannel.delegate, {
    type: 'win-bridge',
    apiVersion: 2,
    Policies: [
      {
        Name: 'EndpointPolicy',
        Value: {
          Type: 'OutBoundNAT',
          Settings: { Exceptions: [settings.podCIDR, settings.serviceCIDR] },
        },
      },
      {
        Name: 'EndpointPolicy',
        Value: {
          Type: 'SDNRoute',
          Settings: { DestinationPrefix: settings.serviceCIDR, NeedEncap: true },
        },
      },
      {
        Name: 'EndpointPolicy',
        Value: {
          Type: 'SDNRoute',
          Settings: { DestinationPrefix: `${settings.nodeIP}/32`, NeedEncap: true },
        },
      },
    ],
  });
  // The vxlan config is unchanged: win-overlay with ProviderAddress, no node route.
  const vxlan = JSON.parse(flannelCniConfig(settings, 4096)) as {
    plugins: { delegate: { type: string; Policies: { Value: { Type: string } }[] } }[];
  };
  assert.equal(vxlan.plugins[0]!.delegate.type, 'win-overlay');
  assert.deepEqual(
    vxlan.plugins[0]!.delegate.Policies.map((p) => p.Value.Type),
    ['OutBoundNAT', 'SDNRoute', 'ProviderAddress'],
  );
});

test('the kubelet configuration turns on graceful node shutdown: a grace period, part of it for critical pods', () => {
  // Without shutdownGracePeriod the Windows shutdown manager is a stub (kubernetes
  // pkg/kubelet/nodeshutdown/nodeshutdown_manager_windows.go NewManager) and an undrained
  // reboot kills pods at once; validation wants critical <= total.
  const config = parseYaml(kubeletConfiguration(settings)) as Record<string, unknown>;
  assert.equal(config.shutdownGracePeriod, '40s');
  assert.equal(config.shutdownGracePeriodCriticalPods, '10s');
});
