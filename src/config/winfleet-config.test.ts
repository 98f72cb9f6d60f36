import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasCode } from '../errors/catalog.ts';
import { isDocumentError } from '../schema/validator.ts';
import { agentHealthDefaults, defaultConfig, parseConfig } from './winfleet-config.ts';

test('an empty document yields the documented defaults', () => {
  const config = defaultConfig();
  assert.deepEqual(config.placement.windowsTaint, {
    key: 'os',
    value: 'windows',
    effect: 'NoSchedule',
  });
  assert.equal(config.placement.linuxTaint.enabled, false);
  assert.equal(config.images.compatibility, 'warn');
  assert.equal(config.webhook.validationFailurePolicy, 'Ignore');
  assert.ok(config.webhook.timeoutSeconds <= 5);
  assert.equal(config.runtimeClasses.handler, 'runhcs-wcow-process');
});

test('the Anthos taint form and a registry mirror are accepted', () => {
  const config = parseConfig(`
placement:
  windowsTaint: { key: node.kubernetes.io/os, value: windows, effect: NoSchedule }
images:
  compatibility: enforce
  mirrors:
    mcr.microsoft.com:
      - endpoint: http://127.0.0.1:5000
        insecure: true
`);
  assert.equal(config.placement.windowsTaint.key, 'node.kubernetes.io/os');
  assert.equal(config.images.mirrors['mcr.microsoft.com']?.[0]?.endpoint, 'http://127.0.0.1:5000');
  assert.equal(config.images.compatibility, 'enforce');
});

test('every problem is reported with its field and the fix', () => {
  assert.throws(
    () =>
      parseConfig(`
placement:
  windowsTaint: { key: os, value: windows, effect: NoScheduel }
webhook:
  timeoutSeconds: 30
images:
  compatability: enforce
  mirrors:
    mcr.microsoft.com:
      - endpoint: 127.0.0.1:5000
`),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const text = error.details.problems.join('\n');
      assert.match(
        text,
        /placement\.windowsTaint\.effect: must be one of "NoSchedule", "PreferNoSchedule", "NoExecute"/,
      );
      assert.match(text, /webhook\.timeoutSeconds: must be ≤ 5/);
      assert.match(text, /images\.compatability: unknown field; remove it or check its spelling/);
      assert.match(
        text,
        /images\.mirrors\["mcr\.microsoft\.com"\]\[0\]\.endpoint "127\.0\.0\.1:5000" is not a URL/,
      );
      return true;
    },
  );
});

test('YAML that is not a mapping, or not YAML, is refused clearly', () => {
  assert.throws(
    () => parseConfig('- a\n- b'),
    (e: unknown) =>
      hasCode(e, 'WF_CONFIG_INVALID') && /must be a mapping of sections/.test(String(e)),
  );
  assert.throws(
    () => parseConfig('placement: [unclosed'),
    (e: unknown) => hasCode(e, 'WF_CONFIG_INVALID') && /not valid YAML/.test(String(e)),
  );
});

/** The problems of `yaml`, which must be refused. */
function problemsOf(yaml: string): string {
  try {
    parseConfig(yaml);
  } catch (error) {
    assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'), String(error));
    return error.message;
  }
  assert.fail(`accepted:\n${yaml}`);
}

test('mirror settings the resolver would refuse are refused by the parse, naming the field', () => {
  const mirror = (entry: string) =>
    `images:\n  mirrors:\n    mcr.microsoft.com:\n      - endpoint: https://ok.example.com\n      - ${entry}\n`;
  const cases: [string, RegExp][] = [
    [
      mirror('endpoint: http://x.example.com'),
      /images\.mirrors\["mcr\.microsoft\.com"\]\[1\]\.endpoint "http:\/\/x\.example\.com" uses plain HTTP; set insecure: true/,
    ],
    [
      mirror('endpoint: https://x.example.com/mcr'),
      /\[1\]\.endpoint "https:\/\/x\.example\.com\/mcr" has the path "\/mcr"; .*pathPrefix/,
    ],
    [
      mirror('{ endpoint: https://x.example.com, pathPrefix: MCR }'),
      /\[1\]\.pathPrefix "MCR" must be lowercase/,
    ],
    [
      mirror('endpoint: ftp://x.example.com'),
      /\[1\]\.endpoint "ftp:\/\/x\.example\.com" must start with https:\/\//,
    ],
    [mirror('endpoint: x.example.com'), /\[1\]\.endpoint "x\.example\.com" is not a URL/],
    [
      'hosts: { serviceCIDR: 999.1.1.1/12 }',
      /hosts\.serviceCIDR: "999\.1\.1\.1\/12" is not an IPv4 CIDR/,
    ],
    [
      'hosts: { podCIDR: 10.244.0.0/40 }',
      /hosts\.podCIDR: "10\.244\.0\.0\/40" is not an IPv4 CIDR/,
    ],
    // Whatever follows a second slash, and a prefix with a leading zero (parseIpv4Cidr).
    [
      'hosts: { podCIDR: 10.244.0.0/16/8 }',
      /hosts\.podCIDR: "10\.244\.0\.0\/16\/8" is not an IPv4 CIDR/,
    ],
    [
      'hosts: { serviceCIDR: 10.96.0.0/012 }',
      /hosts\.serviceCIDR: "10\.96\.0\.0\/012" is not an IPv4 CIDR/,
    ],
  ];
  for (const [yaml, expected] of cases) assert.match(problemsOf(yaml), expected, yaml);
  // Every bad field in one report, schema problems included.
  const both = problemsOf(
    'webhook: { timeoutSeconds: 30 }\nimages:\n  mirrors:\n    m: [{ endpoint: "http://a" }, { endpoint: "https://b/c" }]\n',
  );
  assert.match(both, /webhook\.timeoutSeconds/);
  assert.match(both, /mirrors\["m"\]\[0\]\.endpoint "http:\/\/a"/);
  assert.match(both, /mirrors\["m"\]\[1\]\.endpoint "https:\/\/b\/c"/);
});

test('credentials in a mirror endpoint are refused without being echoed', () => {
  for (const endpoint of [
    'https://winfleet-user:hunter2-secret@mirror.example.com',
    'http://winfleet-user:hunter2-secret@mirror.example.com/path',
    'ftp://winfleet-user:hunter2-secret@mirror.example.com',
    'winfleet-user:hunter2-secret@mirror.example.com',
    'https://mirror.example.com/?password=hunter2-secret',
  ]) {
    const message = problemsOf(`images: { mirrors: { m: [{ endpoint: "${endpoint}" }] } }`);
    assert.match(message, /images\.mirrors\["m"\]\[0\]\.endpoint/);
    assert.ok(!message.includes('hunter2-secret'), message);
    assert.ok(!message.includes('winfleet-user'), message);
  }
});

test('hosts.proxy: a proxy with its bypass list, as a list or one comma-separated string', () => {
  const config = parseConfig(`
hosts:
  proxy:
    httpProxy: http://proxy.corp.example:3128
    httpsProxy: http://proxy.corp.example:3128
    noProxy: .corp.example,10.0.0.0/8
`);
  assert.equal(config.hosts.proxy?.httpProxy, 'http://proxy.corp.example:3128');
  assert.equal(config.hosts.proxy?.noProxy, '.corp.example,10.0.0.0/8');
  assert.equal(defaultConfig().hosts.proxy, undefined, 'no proxy by default');
  assert.deepEqual(defaultConfig().trustedCAs, [], 'no extra CAs by default');
});

test('hosts.proxy problems name the field and the fix, and never quote a password', () => {
  assert.throws(
    () =>
      parseConfig(`
hosts:
  proxy:
    httpProxy: http://bob:hunter2@proxy:3128
    noProxy: [".corp.example;.lab", 5]
    socks: x
`),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const text = error.details.problems.join('\n');
      assert.match(text, /hosts\.proxy\.httpProxy: .*credentials/);
      assert.match(text, /hosts\.proxy\.noProxy\.0: .*contains ";"/);
      assert.match(text, /socks/);
      assert.doesNotMatch(text, /hunter2/);
      return true;
    },
  );
});

test('ca-bundle.crt: CAs are trusted by thumbprint; a non-CA certificate is refused naming the key', async () => {
  const { createCertificateAuthority, issueCertificate } = await import('../pki/certificates.ts');
  const ca = await createCertificateAuthority('Corp Root CA');
  const config = parseConfig('', 'config.yaml', ca.certPem);
  assert.equal(config.trustedCAs.length, 1);
  assert.match(config.trustedCAs[0]!.thumbprint, /^[0-9A-F]{40}$/);
  const leaf = await issueCertificate(ca, { commonName: 'leaf.example', usage: 'server' });
  assert.throws(
    () => parseConfig('', 'config.yaml', `${ca.certPem}${leaf.certPem}junk\n`),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const [first, second] = error.details.problems;
      assert.match(
        first!,
        /^ca-bundle\.crt block 2: "CN=leaf\.example" is not a certificate authority/,
      );
      assert.match(second!, /^ca-bundle\.crt: has text outside PEM blocks/);
      return true;
    },
  );
});

test('a mirror caBundle must hold CA certificates; a mirror key must be a registry host', () => {
  assert.throws(
    () =>
      parseConfig(`
images:
  mirrors:
    "../../Windows":
      - endpoint: https://mirror.example
    mcr.microsoft.com:
      - endpoint: https://mirror.example
        caBundle: not a certificate
`),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const text = error.details.problems.join('\n');
      assert.match(text, /images\.mirrors\["\.\.\/\.\.\/Windows"\]: .*is not a registry host/);
      assert.match(text, /images\.mirrors\["mcr\.microsoft\.com"\]\[0\]\.caBundle/);
      return true;
    },
  );
});

test('hosts.agentHealth: the agent’s own defaults unless tuned; a bad value names its field', () => {
  assert.deepEqual(defaultConfig().hosts.agentHealth, agentHealthDefaults);
  const tuned = parseConfig(`
hosts:
  agentHealth:
    restartLoop: { stableSeconds: 10 }
    clockSkewSeconds: 120
    staleEndpointSeconds: 5
`);
  assert.deepEqual(tuned.hosts.agentHealth, {
    restartLoop: { count: 5, windowSeconds: 600, stableSeconds: 10 },
    clockSkewSeconds: 120,
    staleEndpointSeconds: 5,
  });
  // Absent unless tuned: the agent's own default (60 s) applies.
  assert.equal(parseConfig('hosts: {}\n').hosts.agentHealth.staleEndpointSeconds, undefined);
  assert.throws(
    () => parseConfig('hosts:\n  agentHealth:\n    restartLoop: { count: 0, window: 60 }\n'),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const text = error.details.problems.join('\n');
      assert.match(text, /hosts\.agentHealth\.restartLoop\.count: must be ≥ 1/);
      assert.match(text, /hosts\.agentHealth\.restartLoop\.window: unknown field/);
      return true;
    },
  );
});

test('network: mode auto by default, Flannel’s ConfigMap kube-flannel-cfg, containerd’s CNI directories C:\\etc\\cni\\net.d and C:\\opt\\cni\\bin', () => {
  assert.deepEqual(defaultConfig().network, {
    mode: 'auto',
    flannel: { configMap: { name: 'kube-flannel-cfg' } },
    external: {
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      kubeProxy: 'auto',
    },
  });
  const config = parseConfig(`
network:
  mode: external
  flannel: { configMap: { namespace: kube-system, name: flannel-cfg } }
  external:
    cniConfDir: 'D:\\cni\\conf'
    cniBinDir: 'D:\\cni\\bin'
    kubeProxy: off
    networkName: 'Calico.*'
    daemonSet: calico-system/calico-node-windows
`);
  assert.equal(config.network.mode, 'external');
  assert.deepEqual(config.network.flannel.configMap, {
    namespace: 'kube-system',
    name: 'flannel-cfg',
  });
  assert.equal(config.network.external.cniConfDir, 'D:\\cni\\conf');
  assert.equal(config.network.external.daemonSet, 'calico-system/calico-node-windows');
});

test('network problems name the field and what to write', () => {
  assert.throws(
    () =>
      parseConfig(`
network:
  mode: flannel
  flannel: { configMap: { namespace: Kube_Flannel } }
  external:
    cniConfDir: /etc/cni/net.d
    cniBinDir: 'C:\\opt\\..\\bin'
    kubeProxy: maybe
    networkName: 'Calico(['
    daemonSet: calico-node-windows
`),
    (error: unknown) => {
      assert.ok(isDocumentError(error, 'WF_CONFIG_INVALID'));
      const text = error.details.problems.join('\n');
      assert.match(
        text,
        /network\.mode: must be one of "auto", "flannel-vxlan", "flannel-host-gw", "external", "ovn-hybrid", "routed"/,
      );
      assert.match(text, /network\.flannel\.configMap\.namespace: "Kube_Flannel" does not match/);
      assert.match(text, /network\.external\.kubeProxy: must be one of "auto", "on", "off"/);
      assert.match(text, /network\.external\.daemonSet: "calico-node-windows" does not match/);
      assert.match(
        text,
        /network\.external\.cniConfDir: "\/etc\/cni\/net\.d" is not an absolute Windows path with a drive and backslashes; write e\.g\. "C:\\etc\\cni\\net\.d"/,
      );
      assert.match(text, /network\.external\.cniBinDir: .* has a "\.\." component/);
      assert.match(
        text,
        /network\.external\.networkName: "Calico\(\[" is neither a name nor an RE2 regex/,
      );
      return true;
    },
  );
});
