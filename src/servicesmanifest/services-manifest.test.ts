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
    files: [{ payload: 'kubelet.exe', path: 'C:\\k\\kubelet.exe', sha256: sha }],
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
