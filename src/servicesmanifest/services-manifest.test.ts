import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDocumentError } from '../schema/validator.ts';
import { parseServicesManifest, type ServicesManifest, startOrder } from './services-manifest.ts';

const sha = 'a'.repeat(64);
function manifest(overrides: Partial<ServicesManifest> = {}): ServicesManifest {
  return {
    version: '1.36.5-wf.1',
    services: [
      {
        name: 'containerd',
        displayName: 'containerd',
        binary: 'C:\\k\\containerd.exe',
        args: [],
        dependencies: [],
        priority: 0,
        bootstrap: true,
      },
      {
        name: 'kubelet',
        displayName: 'kubelet',
        binary: 'C:\\k\\kubelet.exe',
        args: ['--hostname-override={{nodeName}}'],
        dependencies: ['containerd'],
        priority: 1,
        bootstrap: true,
      },
      {
        name: 'kube-proxy',
        displayName: 'kube-proxy',
        binary: 'C:\\k\\kube-proxy.exe',
        args: [],
        dependencies: ['kubelet'],
        priority: 2,
        bootstrap: false,
      },
    ],
    files: ['containerd', 'kubelet', 'kube-proxy'].map((name) => ({
      payload: `${name}.exe`,
      path: `C:\\k\\${name}.exe`,
      sha256: sha,
    })),
    ...overrides,
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

test('a good manifest parses and orders bootstrap services first', () => {
  const m = parseServicesManifest(JSON.stringify(manifest()));
  assert.deepEqual(
    startOrder(m).map((s) => s.name),
    ['containerd', 'kubelet', 'kube-proxy'],
  );
});

test('a dependency cycle is refused, naming the cycle', () => {
  const m = manifest();
  m.services[0]!.dependencies = ['kube-proxy'];
  const found = problems(m);
  assert.ok(
    found.some(
      (p) =>
        p === 'services: dependency cycle containerd → kube-proxy → kubelet → containerd; break it',
    ),
    found.join('\n'),
  );
});

test('a bootstrap service may not depend on a later service, nor start after one', () => {
  const m = manifest();
  m.services[1]!.dependencies = ['containerd', 'kube-proxy'];
  assert.ok(
    problems(m).some((p) =>
      /services\.1\.dependencies: bootstrap service "kubelet" depends on "kube-proxy"/.test(p),
    ),
  );
  const late = manifest();
  late.services[2]!.priority = 0;
  assert.ok(
    problems(late).some((p) =>
      /services\.2\.priority: "kube-proxy" starts after bootstrap/.test(p),
    ),
  );
});

test('unknown fields, unknown dependencies and unknown variables are refused with the field named', () => {
  const m = manifest() as unknown as Record<string, unknown>;
  (m.services as Record<string, unknown>[])[0]!.restart = 'always';
  m.extra = 1;
  const found = problems(m);
  assert.ok(
    found.some((p) => p === 'services.0.restart: unknown field; remove it or check its spelling'),
    found.join('\n'),
  );
  assert.ok(
    found.some((p) => p === 'extra: unknown field; remove it or check its spelling'),
    found.join('\n'),
  );
  const deps = manifest();
  deps.services[2]!.dependencies = ['hns'];
  assert.ok(
    problems(deps).some((p) =>
      /services\.2\.dependencies: "hns" is not a service of this manifest/.test(p),
    ),
  );
  const vars = manifest();
  vars.services[1]!.args = ['--node-ip={{nodeIp}}'];
  assert.ok(
    problems(vars).some((p) =>
      /services\.1\.args: unknown variable \{\{nodeIp\}\}; use one of nodeName, nodeIP/.test(p),
    ),
  );
  const dup = manifest();
  dup.services[2]!.name = 'kubelet';
  assert.ok(problems(dup).some((p) => /appears twice/.test(p)));
  assert.ok(problems('{not json').some((p) => /not JSON/.test(p)));
});

test('a service binary must be a payload file of the manifest, inside C:\\k, in its plain spelling', () => {
  const attacks = [
    'C:\\Windows\\System32\\cmd.exe',
    'C:\\k\\..\\evil.exe',
    'c:\\K\\.\\kubelet.exe',
    'C:\\k\\kubelet.exe:evil.exe',
    'C:\\k/../evil.exe',
    'C:\\k\\.. \\evil.exe',
    'C:\\k\\kubelet.exe.',
    '\\\\?\\C:\\k\\kubelet.exe',
    '\\\\.\\C:\\k\\kubelet.exe',
    '\\\\server\\share\\k\\kubelet.exe',
    'C:\\k\\KUBELE~1.EXE',
    'C:\\k\\NUL',
    'C:\\kevil\\kubelet.exe',
    'D:\\k\\kubelet.exe',
    'C:\\k\\winfleet\\winfleet-agent.exe',
  ];
  for (const binary of attacks) {
    const m = manifest();
    m.services[1]!.binary = binary;
    m.files.push({ payload: 'evil.exe', path: binary, sha256: sha });
    const found = problems(m);
    assert.ok(
      found.some((p) => p.startsWith('services.1.binary: ')),
      `${binary}: ${found.join('\n')}`,
    );
    assert.ok(
      found.some((p) => p.startsWith(`files.${m.files.length - 1}.path: `)),
      `${binary}: ${found.join('\n')}`,
    );
  }
  const notAFile = manifest();
  notAFile.services[2]!.binary = 'C:\\k\\other.exe';
  assert.ok(
    problems(notAFile).includes(
      'services.2.binary: "C:\\k\\other.exe" is not the path of a file of this manifest; every service binary must be a payload file with its SHA-256',
    ),
  );
  const caseOnly = manifest();
  caseOnly.services[1]!.binary = 'c:\\K\\KUBELET.EXE';
  assert.deepEqual(problems(caseOnly), [], 'Windows paths are case-insensitive');
  const nested = manifest();
  nested.files.push({ payload: 'flannel.exe', path: 'C:\\k\\cni\\bin\\flannel.exe', sha256: sha });
  assert.deepEqual(problems(nested), []);
});

test('environment variables that decide what Windows loads are refused', () => {
  for (const name of [
    'PATH',
    'Path',
    'PATHEXT',
    'ComSpec',
    'SystemRoot',
    'COMPlus_ETWEnabled',
    'DOTNET_STARTUP_HOOKS',
    'TEMP',
  ]) {
    const m = manifest({ env: { [name]: 'C:\\evil' } });
    assert.ok(
      problems(m).some((p) => p.startsWith(`env.${name}: `)),
      name,
    );
  }
  assert.deepEqual(
    problems(manifest({ env: { HTTPS_PROXY: 'http://proxy:3128', KUBE_NETWORK: 'x' } })),
    [],
  );
});

test('a service environment is checked as strictly as the manifest one, per service', () => {
  const withEnv = (env: Record<string, string>) => {
    const m = manifest();
    m.services[2] = { ...m.services[2]!, env };
    return m;
  };
  assert.deepEqual(
    problems(withEnv({ KUBE_NETWORK: 'winfleet', NODE_NAME: '{{nodeName}}' })),
    [],
    'variables and node values',
  );
  assert.equal(
    parseServicesManifest(withEnv({ KUBE_NETWORK: 'winfleet' })).services[2]!.env?.KUBE_NETWORK,
    'winfleet',
  );
  assert.deepEqual(problems(withEnv({ Path: 'C:\\evil', DOTNET_STARTUP_HOOKS: 'x.dll' })), [
    'services.2.env.Path: this variable decides which programs Windows loads; a manifest may not set it',
    'services.2.env.DOTNET_STARTUP_HOOKS: this variable decides which programs Windows loads; a manifest may not set it',
  ]);
  assert.deepEqual(problems(withEnv({ A: '1', a: '2' })), [
    'services.2.env.a: the same variable as "A" (Windows environment names ignore case); keep one',
  ]);
  assert.deepEqual(problems(withEnv({ EMPTY: '' })), [
    'services.2.env.EMPTY: the value must be 1 to 32767 characters without NUL; leave the variable out to unset it',
  ]);
  assert.deepEqual(problems(withEnv({ 'A=B': 'x' })), [
    'services.2.env.A=B: not a Windows environment variable name; use 1 to 255 characters without "="',
  ]);
  assert.deepEqual(problems(withEnv({ X: '{{secret}}' })), [
    'services.2.env.X: unknown variable {{secret}}; use one of nodeName, nodeIP, nodeLabels, hostname, kubeDir, clusterDNS, clusterDomain, serviceCIDR, podCIDR, apiServer, sourceVip',
  ]);
  const wrongType = withEnv({}) as unknown as { services: { env: unknown }[] };
  wrongType.services[2]!.env = { X: 3 };
  assert.ok(
    problems(wrongType as unknown as ServicesManifest).some((p) =>
      p.startsWith('services.2.env.X'),
    ),
  );
});

test('attacker side: host settings cannot write outside certs.d or trust what is not a CA', async () => {
  const { createCertificateAuthority, issueCertificate } = await import('../pki/certificates.ts');
  const { parseCaBundle } = await import('../pki/trusted-ca-bundle.ts');
  const ca = await createCertificateAuthority('Corp Root CA');
  const leaf = await issueCertificate(ca, { commonName: 'leaf.example', usage: 'server' });
  const [trusted] = parseCaBundle(ca.certPem).certificates;
  const base = manifest();
  const hostile = {
    ...base,
    hostSettings: {
      trustedCertificates: [
        { thumbprint: trusted!.thumbprint, pem: leaf.certPem },
        { thumbprint: '0'.repeat(40), pem: ca.certPem },
      ],
      registryHosts: [
        { registry: '..\\..\\Windows', directory: '..\\..\\Windows', files: { 'hosts.toml': '' } },
        { registry: 'mcr.microsoft.com', directory: 'docker.io', files: { 'hosts.toml': '' } },
        {
          registry: 'mcr.microsoft.com',
          directory: 'mcr.microsoft.com',
          files: { 'hosts.toml': '', '..\\..\\kubelet.exe': 'x' },
        },
      ],
    },
  };
  assert.throws(
    () => parseServicesManifest(hostile),
    (error: unknown) => {
      const text = (error as { details: { problems: string[] } }).details.problems.join('\n');
      assert.match(
        text,
        /hostSettings\.trustedCertificates\.0\.pem: .*is not a certificate authority/,
      );
      assert.match(
        text,
        /hostSettings\.trustedCertificates\.1\.pem: the thumbprint 0{40} is not the certificate's/,
      );
      assert.match(text, /hostSettings\.registryHosts\.0\.registry: .*is not a registry host/);
      assert.match(
        text,
        /hostSettings\.registryHosts\.1\.directory: "docker\.io" is not containerd's directory/,
      );
      assert.match(
        text,
        /hostSettings\.registryHosts\.2\.files: "\.\.\\\.\.\\kubelet\.exe" is not a plain file name/,
      );
      return true;
    },
  );
  const fine = parseServicesManifest({
    ...base,
    hostSettings: { trustedCertificates: [{ thumbprint: trusted!.thumbprint, pem: trusted!.pem }] },
  });
  assert.equal(fine.hostSettings?.trustedCertificates?.length, 1);
});
