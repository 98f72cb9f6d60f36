import assert from 'node:assert/strict';
import { test } from 'node:test';
import { patchRequirements } from '../../windows/patch-levels.ts';
import type { CheckResult } from './check-report.ts';
import {
  bypasses,
  type HostCheckInput,
  hostChecks,
  hostKeyCheck,
  maskUserInfo,
  patchLevel,
} from './host-checks.ts';
import type { HostBasics, HyperVFacts, PreflightFacts } from './preflight-facts.ts';

const gib = 1024 ** 3;

function input(
  basics: Partial<HostBasics> = {},
  facts: Partial<PreflightFacts> = {},
  extra: Partial<HostCheckInput> = {},
): HostCheckInput {
  return {
    basics: {
      hostname: 'WIN-NODE-01',
      osVersion: {
        major: 10,
        minor: 0,
        build: 20348,
        ubr: 2582,
        productName: 'Windows Server 2022 Datacenter',
      },
      freeBytes: 100 * gib,
      containersFeature: 'Installed',
      ...basics,
    },
    facts: {
      netbiosName: 'WIN-NODE-01',
      partOfDomain: false,
      domain: 'WORKGROUP',
      logicalProcessors: 4,
      memoryBytes: 16 * gib,
      userName: 'WIN-NODE-01\\Administrator',
      administrator: true,
      utcNow: new Date().toISOString(),
      listeners10250: [],
      firewallRules10250: [],
      winHttpProxy: { proxyServer: null, bypassList: null },
      proxyEnvironment: { HTTP_PROXY: null, HTTPS_PROXY: null, NO_PROXY: null },
      ...facts,
    },
    domainJoin: false,
    clock: { offsetMs: 300, uncertaintyMs: 800, reference: 'the API server' },
    apiServerHost: '10.0.0.1',
    joined: false,
    network: { overlay: undefined, seen: 'no CNI recognized in the cluster' },
    ...extra,
  };
}

function byName(checks: CheckResult[]): Record<string, CheckResult> {
  return Object.fromEntries(checks.map((c) => [c.name, c]));
}

function failing(checks: CheckResult[]): string[] {
  return checks.filter((c) => c.status === 'fail').map((c) => c.name);
}

test('a host that meets every requirement passes every check', () => {
  const checks = hostChecks(input());
  assert.deepEqual(
    checks.map((c) => c.name),
    [
      'windows-build',
      'patch-level',
      'containers-feature',
      'administrator',
      'cpu',
      'memory',
      'disk',
      'hostname-length',
      'clock-skew',
      'port-10250',
      'firewall-10250',
      'proxy',
    ],
  );
  assert.deepEqual(
    checks.filter((c) => c.status !== 'pass'),
    [],
  );
  for (const c of checks) assert.equal(c.fix, '');
});

test("a host below Rancher's minimums fails cpu, memory and disk, each with a fix", () => {
  const checks = hostChecks(
    input({ freeBytes: 30 * gib }, { logicalProcessors: 1, memoryBytes: 4 * gib }),
  );
  assert.deepEqual(failing(checks), ['cpu', 'memory', 'disk']);
  const c = byName(checks);
  assert.match(c.cpu!.message, /1 logical processor, fewer than the 2/);
  assert.match(c.memory!.message, /4\.0 GiB of memory .* less than the 5\.0 GiB/);
  assert.match(c.disk!.message, /30\.0 GiB free on C:, less than the 50\.0 GiB/);
  for (const name of ['cpu', 'memory', 'disk']) assert.notEqual(c[name]!.fix, '');
});

test('memory a little under 5 GiB (firmware reservation) passes; 4.5 GiB does not', () => {
  assert.equal(
    byName(hostChecks(input({}, { memoryBytes: 5 * gib - 60 * 1024 ** 2 }))).memory!.status,
    'pass',
  );
  assert.equal(byName(hostChecks(input({}, { memoryBytes: 4.5 * gib }))).memory!.status, 'fail');
});

test('a 16-character hostname fails when the host is or will be domain-joined, not in a workgroup', () => {
  const long = { hostname: 'a-name-of-16-chr' };
  const workgroup = byName(hostChecks(input(long)))['hostname-length']!;
  assert.equal(workgroup.status, 'pass');
  const planned = byName(hostChecks(input(long, {}, { domainJoin: true })))['hostname-length']!;
  assert.equal(planned.status, 'fail');
  assert.match(planned.message, /16 characters and it will be domain-joined/);
  assert.match(planned.fix, /Rename-Computer/);
  const joined = byName(
    hostChecks(input(long, { partOfDomain: true, domain: 'corp.example.com' })),
  )['hostname-length']!;
  assert.equal(joined.status, 'fail');
  assert.match(joined.message, /joined to corp\.example\.com/);
  const fifteen = byName(
    hostChecks(input({ hostname: 'a-name-of-15-ch' }, {}, { domainJoin: true })),
  )['hostname-length']!;
  assert.equal(fifteen.status, 'pass');
});

test('the Containers feature: Available or Removed fails, InstallPending warns', () => {
  const available = byName(hostChecks(input({ containersFeature: 'Available' })))[
    'containers-feature'
  ]!;
  assert.equal(available.status, 'fail');
  assert.match(available.fix, /Install-WindowsFeature -Name Containers/);
  assert.match(
    byName(hostChecks(input({ containersFeature: 'Removed' })))['containers-feature']!.fix,
    /-Source/,
  );
  assert.equal(
    byName(hostChecks(input({ containersFeature: 'InstallPending' })))['containers-feature']!
      .status,
    'warn',
  );
  assert.equal(
    byName(hostChecks(input({ containersFeature: 'Unknown' })))['containers-feature']!.status,
    'fail',
  );
});

test('builds other than 2019, 2022 and 2025 fail', () => {
  for (const build of [14393, 25398, 22631]) {
    const check = byName(
      hostChecks(input({ osVersion: { major: 10, minor: 0, build, ubr: 1, productName: 'x' } })),
    )['windows-build']!;
    assert.equal(check.status, 'fail', String(build));
  }
  for (const build of [17763, 20348, 26100])
    assert.equal(
      byName(
        hostChecks(input({ osVersion: { major: 10, minor: 0, build, ubr: 1, productName: 'x' } })),
      )['windows-build']!.status,
      'pass',
    );
});

test('not an administrator fails', () => {
  assert.deepEqual(failing(hostChecks(input({}, { administrator: false }))), ['administrator']);
});

test('clock skew beyond 60 s fails, near it warns, with the reference named', () => {
  const far = byName(
    hostChecks(
      input(
        {},
        {},
        { clock: { offsetMs: -125_000, uncertaintyMs: 1000, reference: 'this machine' } },
      ),
    ),
  )['clock-skew']!;
  assert.equal(far.status, 'fail');
  assert.match(far.message, /125\.0 s .* behind this machine's/);
  const near = byName(
    hostChecks(
      input(
        {},
        {},
        { clock: { offsetMs: 59_500, uncertaintyMs: 1000, reference: 'the API server' } },
      ),
    ),
  )['clock-skew']!;
  assert.equal(near.status, 'warn');
});

test('port 10250: another program fails, a kubelet warns on a new host and passes on a node', () => {
  const other = { localAddress: '0.0.0.0', owningProcess: 4242, processName: 'otheragent' };
  const kubelet = { localAddress: '::', owningProcess: 4312, processName: 'kubelet' };
  assert.equal(
    byName(hostChecks(input({}, { listeners10250: [other] })))['port-10250']!.status,
    'fail',
  );
  assert.equal(
    byName(hostChecks(input({}, { listeners10250: [kubelet] })))['port-10250']!.status,
    'warn',
  );
  assert.equal(
    byName(hostChecks(input({}, { listeners10250: [kubelet] }, { joined: true })))['port-10250']!
      .status,
    'pass',
  );
});

test('firewall: a Block rule fails; no rule passes before a join and fails on a node', () => {
  const block = { name: 'deny-kubelet', enabled: true, direction: 'Inbound', action: 'Block' };
  const allow = { name: 'winfleet-kubelet', enabled: true, direction: 'Inbound', action: 'Allow' };
  const disabled = { ...allow, enabled: false };
  assert.equal(
    byName(hostChecks(input({}, { firewallRules10250: [allow, block] })))['firewall-10250']!.status,
    'fail',
  );
  assert.equal(
    byName(hostChecks(input({}, { firewallRules10250: [allow] })))['firewall-10250']!.status,
    'pass',
  );
  assert.equal(
    byName(hostChecks(input({}, { firewallRules10250: [disabled] })))['firewall-10250']!.status,
    'pass',
  );
  assert.equal(
    byName(hostChecks(input({}, { firewallRules10250: [disabled] }, { joined: true })))[
      'firewall-10250'
    ]!.status,
    'fail',
  );
});

test('proxy: reported; a proxy whose bypass does not name the API server warns', () => {
  const env = { HTTP_PROXY: null, HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: null };
  const noBypass = byName(hostChecks(input({}, { proxyEnvironment: env }))).proxy!;
  assert.equal(noBypass.status, 'warn');
  assert.match(
    noBypass.message,
    /HTTPS_PROXY=http:\/\/proxy:3128; NO_PROXY does not name the API server 10\.0\.0\.1/,
  );
  const bypassed = byName(
    hostChecks(input({}, { proxyEnvironment: { ...env, NO_PROXY: 'localhost,10.0.0.1' } })),
  ).proxy!;
  assert.equal(bypassed.status, 'pass');
  const winHttp = byName(
    hostChecks(input({}, { winHttpProxy: { proxyServer: 'proxy:3128', bypassList: '<local>' } })),
  ).proxy!;
  assert.equal(winHttp.status, 'warn');
  assert.match(winHttp.message, /WinHTTP proxy proxy:3128/);
});

test('proxy: a proxy password is never printed (env URLs and the WinHTTP proxy list), nor in -o json', () => {
  const password = 'S3cr;t,p@ss';
  const check = byName(
    hostChecks(
      input(
        {},
        {
          proxyEnvironment: {
            HTTP_PROXY: `http://user:${password}@proxy:3128`,
            HTTPS_PROXY: `user:${password}@proxy:3129`,
            NO_PROXY: 'localhost',
          },
          winHttpProxy: {
            proxyServer: `http=user:${password}@proxy:3128;https=https://u2:${password}@proxy2:443`,
            bypassList: '<local>',
          },
        },
      ),
    ),
  ).proxy!;
  const printed = JSON.stringify(check);
  for (const piece of [password, 'S3cr', 't,p', 'ss@proxy'])
    assert.ok(!printed.includes(piece), `${piece} printed: ${printed}`);
  assert.match(
    check.message,
    /HTTP_PROXY=http:\/\/\*\*\*@proxy:3128; HTTPS_PROXY=\*\*\*@proxy:3129/,
  );
  assert.match(
    check.message,
    /WinHTTP proxy http=\*\*\*@proxy:3128;https=https:\/\/\*\*\*@proxy2:443 \(bypass <local>\)/,
  );
  // Settings without user info are printed as they are.
  assert.equal(maskUserInfo('http://proxy:3128'), 'http://proxy:3128');
  assert.equal(maskUserInfo('localhost,10.0.0.1,.corp'), 'localhost,10.0.0.1,.corp');
  assert.equal(maskUserInfo('http=p:80;https=p:443'), 'http=p:80;https=p:443');
});

test('host-key: the presented key is reported; verified only against --host-key or the pinned key', () => {
  const fp = `SHA256:${'A'.repeat(43)}`;
  const bare = hostKeyCheck('10.0.0.5:22', fp, undefined, false);
  assert.equal(bare.status, 'warn');
  assert.equal(bare.message, `10.0.0.5:22 presented ${fp}; not verified (no --host-key)`);
  assert.match(
    bare.fix!,
    /ssh-keygen -lf C:\\ProgramData\\ssh\\ssh_host_ed25519_key\.pub, then pass it with --host-key/,
  );
  const given = hostKeyCheck('10.0.0.5:22', fp, { fingerprint: fp, source: '--host-key' }, false);
  assert.equal(given.status, 'pass');
  assert.match(given.message, /presented SHA256:A{43}, matching --host-key/);
  const unpinned = hostKeyCheck('10.0.0.5:22', fp, undefined, true);
  assert.equal(unpinned.status, 'warn');
  assert.match(unpinned.message, /no pinned key yet/);
  const pinned = hostKeyCheck(
    '10.0.0.5:22',
    fp,
    { fingerprint: fp, source: 'the key the operator pinned in status.hostKeyFingerprint' },
    true,
  );
  assert.equal(pinned.status, 'pass');
  assert.match(
    pinned.message,
    /, matching the key the operator pinned in status\.hostKeyFingerprint \(checked on connecting\)$/,
  );
});

test('bypass lists match exact names, suffixes and *', () => {
  assert.ok(bypasses('a, .corp.example', 'api.corp.example'));
  assert.ok(bypasses('<local>;*.corp.example', 'api.corp.example'));
  assert.ok(bypasses('*', 'x'));
  assert.ok(!bypasses('corp.example', 'api.corp.example'));
  assert.ok(!bypasses('', '10.0.0.1'));
});

test('patch-level: each requirement fails just below its UBR when the cluster uses the feature, passes at it', () => {
  assert.ok(patchRequirements.length > 0);
  const vxlan = { overlay: true, seen: 'Flannel VXLAN (ConfigMap kube-flannel/kube-flannel-cfg)' };
  for (const r of patchRequirements) {
    const [major, minor, build] = r.build.split('.').map(Number) as [number, number, number];
    const at = (ubr: number) => ({
      hostname: 'WIN-NODE-01',
      osVersion: { major, minor, build, ubr, productName: `Windows Server ${r.release}` },
      freeBytes: 100 * gib,
      containersFeature: 'Installed',
    });
    // The cluster uses the requirement's feature (overlay is the only feature so far).
    const network = vxlan;
    const below = patchLevel(at(r.minUbr - 1), network);
    assert.equal(below.status, 'fail', r.kb);
    assert.match(below.message, new RegExp(`${r.build}\\.${r.minUbr - 1} is below`));
    assert.match(below.message, /Flannel VXLAN \(ConfigMap kube-flannel\/kube-flannel-cfg\)/);
    assert.match(below.fix, new RegExp(`Install ${r.kb} or any later cumulative update`));
    assert.match(below.fix, new RegExp(`at least ${r.build.replace(/\./g, '\\.')}\\.${r.minUbr}`));
    const equal = patchLevel(at(r.minUbr), network);
    assert.equal(equal.status, 'pass', r.kb);
    assert.equal(equal.fix, '');
    assert.match(equal.message, new RegExp(`has ${r.kb}`));
  }
});

test('patch-level: KB4489899 (10.0.17763.379) for overlay networking on Windows Server 2019', () => {
  const overlay = patchRequirements.find((r) => r.feature === 'overlay');
  assert.deepEqual(overlay && { build: overlay.build, minUbr: overlay.minUbr, kb: overlay.kb }, {
    build: '10.0.17763',
    minUbr: 379,
    kb: 'KB4489899',
  });
});

test('patch-level: an unknown CNI warns below the UBR; host-gw (no overlay) passes', () => {
  const old2019 = {
    osVersion: { major: 10, minor: 0, build: 17763, ubr: 378, productName: 'Windows Server 2019' },
  };
  const unknown = byName(hostChecks(input(old2019)))['patch-level']!;
  assert.equal(unknown.status, 'warn');
  assert.match(unknown.message, /whether the cluster uses it is not known \(no CNI recognized/);
  assert.match(unknown.fix, /KB4489899/);
  const skipped = byName(
    hostChecks(
      input(old2019, {}, { network: { overlay: undefined, seen: '--skip-cluster: not read' } }),
    ),
  )['patch-level']!;
  assert.equal(skipped.status, 'warn');
  const hostGw = byName(
    hostChecks(input(old2019, {}, { network: { overlay: false, seen: 'Flannel host-gw (x)' } })),
  )['patch-level']!;
  assert.equal(hostGw.status, 'pass');
  assert.match(hostGw.message, /which the cluster does not use \(Flannel host-gw/);
  // 2022 and 2025 have no requirement; an unsupported build is left to windows-build.
  for (const build of [20348, 26100, 14393]) {
    const check = byName(
      hostChecks(
        input(
          { osVersion: { major: 10, minor: 0, build, ubr: 1, productName: 'x' } },
          {},
          { network: { overlay: true, seen: 'Flannel VXLAN (x)' } },
        ),
      ),
    )['patch-level']!;
    assert.equal(check.status, 'pass', String(build));
  }
});

test('--hyperv: the Hyper-V role, its hypervisor, and on a VM nested virtualization', () => {
  const hyperv = (h: HyperVFacts) => byName(hostChecks(input({}, {}, { hyperV: h }))).hyperv!;
  assert.equal(byName(hostChecks(input())).hyperv, undefined, 'only with --hyperv');
  assert.equal(
    hyperv({ feature: 'Installed', hypervisorPresent: true, virtualizationFirmwareEnabled: false })
      .status,
    'pass',
  );
  const noNested = hyperv({
    feature: 'Available',
    hypervisorPresent: true,
    virtualizationFirmwareEnabled: false,
  });
  assert.equal(noNested.status, 'fail');
  assert.match(noNested.message, /does not expose nested virtualization/);
  assert.match(noNested.fix, /ExposeVirtualizationExtensions/);
  const installable = hyperv({
    feature: 'Available',
    hypervisorPresent: true,
    virtualizationFirmwareEnabled: true,
  });
  assert.match(installable.fix, /^Install-WindowsFeature -Name Hyper-V/);
  const metal = hyperv({
    feature: 'Available',
    hypervisorPresent: false,
    virtualizationFirmwareEnabled: false,
  });
  assert.match(metal.message, /virtualization is off in the firmware/);
  assert.equal(
    hyperv({ feature: 'Installed', hypervisorPresent: false, virtualizationFirmwareEnabled: false })
      .status,
    'fail',
  );
  assert.equal(
    hyperv({
      feature: 'InstallPending',
      hypervisorPresent: true,
      virtualizationFirmwareEnabled: true,
    }).status,
    'warn',
  );
});
