/**
 * The generated flag lists and the pflag/kingpin parsers: the manifest's command lines pass,
 * and what the pinned programs refuse is refused with their message.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { servicesManifestFor } from '../../src/payload/node-services.ts';
import { expandArgument, type NodeVariable } from '../../src/servicesmanifest/services-manifest.ts';
import { writeStandInPayload } from '../testkit/payload.ts';
import {
  FlagError,
  flagLists,
  type KingpinList,
  type PflagList,
  parseKingpin,
  parsePflag,
} from './flag-lists.ts';
import { readKubeProxyFlags } from './kube-proxy-standin.ts';
import { parseKubeletFlags } from './kubelet-settings.ts';

const values: Record<NodeVariable, string> = {
  nodeName: 'win-1',
  nodeIP: '127.0.0.20',
  nodeLabels: 'winfleet.io/pool=blue',
  hostname: 'WIN1',
  kubeDir: 'C:\\k',
  clusterDNS: '10.96.0.10',
  clusterDomain: 'cluster.local',
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  apiServer: 'https://127.0.0.1:6443',
  sourceVip: '10.244.3.2',
};

/** The manifest's arguments for each service, expanded as the agent expands them. */
async function manifestArgs(t: { after(fn: () => Promise<void>): void }) {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-flag-lists-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const manifest = servicesManifestFor(await writeStandInPayload(dir));
  return new Map(
    manifest.services.map((s) => [s.name, s.args.map((a) => expandArgument(a, values))]),
  );
}

test('the lists come from the pinned versions, Windows-only flags included', () => {
  const lists = flagLists();
  assert.equal(lists.kubelet.version, 'v1.36.5');
  assert.equal(lists['kube-proxy'].version, 'v1.36.5');
  assert.equal(lists.windows_exporter.version, 'v0.31.3');
  const names = (list: PflagList | KingpinList) => new Set(list.flags.map((f) => f.name));
  for (const flag of ['windows-service', 'windows-priorityclass', 'hostname-override', 'v'])
    assert.ok(names(lists.kubelet).has(flag), `kubelet --${flag}`);
  for (const flag of ['windows-service', 'network-name', 'source-vip', 'enable-dsr'])
    assert.ok(names(lists['kube-proxy']).has(flag), `kube-proxy --${flag}`);
  // klog's --log-file and --logtostderr went with 1.26: neither program has them.
  for (const flag of ['log-file', 'logtostderr', 'log-dir', 'alsologtostderr']) {
    assert.equal(names(lists.kubelet).has(flag), false, `kubelet --${flag}`);
    assert.equal(names(lists['kube-proxy']).has(flag), false, `kube-proxy --${flag}`);
  }
  assert.ok(names(lists.windows_exporter).has('log.file'));
  assert.ok(names(lists.windows_exporter).has('collectors.enabled'));
  assert.ok(lists.windows_exporter.collectors.includes('cpu_info'));
  assert.equal(lists.windows_exporter.collectors.includes('cs'), false, 'cs went in v0.30');
});

test('the manifest’s kubelet, kube-proxy and windows_exporter command lines are accepted', async (t) => {
  const args = await manifestArgs(t);
  const kubelet = parseKubeletFlags(args.get('kubelet')!);
  assert.equal(kubelet.flags.get('windows-service'), 'true');
  assert.equal(kubelet.flags.get('hostname-override'), 'win-1');
  assert.equal(readKubeProxyFlags(args.get('kube-proxy')!).windowsService, true);
  const exporter = parseKingpin(flagLists().windows_exporter, args.get('windows_exporter')!);
  for (const name of exporter.values.get('collectors.enabled')!.split(','))
    assert.ok(flagLists().windows_exporter.collectors.includes(name), name);
});

test('flags the pinned kubelet and kube-proxy refuse are refused with pflag’s message', () => {
  assert.throws(
    () => parseKubeletFlags(['--windows-service', '--log-file=C:\\k\\logs\\kubelet.log']),
    { message: 'failed to parse kubelet flag: unknown flag: --log-file' },
  );
  assert.throws(() => parseKubeletFlags(['--logtostderr=false']), {
    message: 'failed to parse kubelet flag: unknown flag: --logtostderr',
  });
  assert.throws(() => parseKubeletFlags(['-windows-service']), {
    message: "failed to parse kubelet flag: unknown shorthand flag: 'w' in -windows-service",
  });
  assert.throws(() => parseKubeletFlags(['--v=2', 'extra']), {
    message: 'unknown command extra',
  });
  assert.throws(() => readKubeProxyFlags(['--log-file=C:\\k\\logs\\kube-proxy.log']), {
    name: 'FlagError',
    message: 'unknown flag: --log-file',
  });
  assert.throws(() => readKubeProxyFlags(['--kubeconfig']), {
    message: 'flag needs an argument: --kubeconfig',
  });
  // "_" is read as "-", as component-base's normalization does.
  const normalized = readKubeProxyFlags(['--hostname_override=x', '--cluster_cidr=10.244.0.0/16']);
  assert.equal(normalized.hostnameOverride, 'x');
  assert.equal(normalized.clusterCidr, '10.244.0.0/16');
});

const pflagList: PflagList = {
  program: 'test',
  version: 'v0',
  syntax: 'pflag',
  normalizesWordSeparators: true,
  flags: [
    { name: 'verbose', shorthand: 'x', noOptDefVal: 'true', type: 'bool' },
    { name: 'v', shorthand: 'v', type: 'Level' },
    { name: 'name', type: 'string' },
    { name: 'old', type: 'string', deprecated: 'use --name instead' },
  ],
};

test('pflag rules: values, shorthand groups, "--", booleans, deprecation', () => {
  const parsed = parsePflag(pflagList, ['-xv3', '--name', 'a', '--old=b', '--', '--name=c']);
  assert.deepEqual(
    [...parsed.values],
    [
      ['verbose', 'true'],
      ['v', '3'],
      ['name', 'a'],
      ['old', 'b'],
    ],
  );
  assert.deepEqual(parsed.positional, ['--name=c']);
  assert.deepEqual(parsed.warnings, ['Flag --old has been deprecated, use --name instead']);
  assert.equal(parsePflag(pflagList, ['-v=4']).values.get('v'), '4');
  assert.equal(parsePflag(pflagList, ['-v', '5']).values.get('v'), '5');
  assert.equal(parsePflag(pflagList, ['--verbose=false']).values.get('verbose'), 'false');
  const refused = (argv: string[]) => {
    try {
      parsePflag(pflagList, argv);
      return 'accepted';
    } catch (error) {
      assert.ok(error instanceof FlagError);
      return error.message;
    }
  };
  assert.equal(refused(['---name=a']), 'bad flag syntax: ---name=a');
  assert.equal(refused(['--=a']), 'bad flag syntax: --=a');
  assert.equal(refused(['-xq']), "unknown shorthand flag: 'q' in -q");
  assert.equal(refused(['-v']), "flag needs an argument: 'v' in -v");
  assert.equal(refused(['--name']), 'flag needs an argument: --name');
  assert.equal(
    refused(['--verbose=yes']),
    'invalid argument "yes" for "-x, --verbose" flag: strconv.ParseBool: parsing "yes": invalid syntax',
  );
});

const kingpinList: KingpinList = {
  program: 'test',
  version: 'v0',
  syntax: 'kingpin',
  flags: [
    { name: 'debug.enabled', boolean: true, source: 'main.go' },
    { name: 'log.file', boolean: false, source: 'flag.go' },
    { name: 'help', short: 'h', boolean: true, source: 'kingpin' },
  ],
  collectors: ['cpu'],
  defaultCollectors: 'cpu',
};

test('kingpin rules: values, --no- booleans, and its messages', () => {
  const parsed = parseKingpin(kingpinList, ['--log.file', 'C:\\x.log', '--no-debug.enabled']);
  assert.deepEqual(
    [...parsed.values],
    [
      ['log.file', 'C:\\x.log'],
      ['debug.enabled', 'false'],
    ],
  );
  const refused = (argv: string[]) => {
    try {
      parseKingpin(kingpinList, argv);
      return 'accepted';
    } catch (error) {
      assert.ok(error instanceof FlagError);
      return error.message;
    }
  };
  assert.equal(refused(['--collectors.enabled=cpu']), "unknown long flag '--collectors.enabled'");
  assert.equal(refused(['-q']), "unknown short flag '-q'");
  assert.equal(refused(['--log.file']), "expected argument for flag '--log.file'");
  assert.equal(refused(['--no-log.file']), "unknown long flag '--no-log.file'");
  assert.equal(refused(['--debug.enabled=false']), 'unexpected false');
  assert.equal(refused(['stray']), 'unexpected stray');
});
