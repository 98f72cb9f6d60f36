import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { defaultConfig, parseConfig } from '../config/winfleet-config.ts';
import { applyPatch } from './json-patch.ts';
import { mutatePod, mutationsAnnotation } from './mutate-pod.ts';

const config = defaultConfig();
const noRuntimeClasses = () => undefined;
const runtimeClasses = (name: string): Record<string, string> | undefined =>
  name === 'windows-2019'
    ? {
        'kubernetes.io/os': 'windows',
        'kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/windows-build': '10.0.17763',
      }
    : name === 'windows-any'
      ? { 'kubernetes.io/os': 'windows' }
      : undefined;

function pod(spec: Partial<k8s.V1PodSpec>, metadata: k8s.V1ObjectMeta = {}): k8s.V1Pod {
  return {
    metadata: { name: 'p', ...metadata },
    spec: { containers: [{ name: 'c', image: 'img' }], ...spec },
  };
}

test('a pod with the seed nodeSelector gets the toleration, spec.os and build affinity, listed in an annotation', () => {
  const input = pod({ nodeSelector: { 'kubernetes.io/os': 'windows' } });
  const m = mutatePod(input, {
    config,
    runtimeClasses: noRuntimeClasses,
    allowedBuilds: ['10.0.20348', '10.0.26100'],
  });
  assert.equal(m.podOs?.os, 'windows');
  const out = applyPatch(input, m.patch);
  assert.deepEqual(out.spec?.tolerations, [
    { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' },
  ]);
  assert.equal(out.spec?.os?.name, 'windows');
  assert.deepEqual(
    out.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ?.nodeSelectorTerms,
    [
      {
        matchExpressions: [
          {
            key: 'node.kubernetes.io/windows-build',
            operator: 'In',
            values: ['10.0.20348', '10.0.26100'],
          },
        ],
      },
    ],
  );
  assert.equal(
    out.metadata?.annotations?.[mutationsAnnotation],
    'added toleration os=windows:NoSchedule; set spec.os.name=windows; added required node affinity node.kubernetes.io/windows-build In [10.0.20348, 10.0.26100]',
  );
});

test('spec.os.name=windows alone adds the nodeSelector too', () => {
  const input = pod({ os: { name: 'windows' } });
  const out = applyPatch(
    input,
    mutatePod(input, { config, runtimeClasses: noRuntimeClasses }).patch,
  );
  assert.equal(out.spec?.nodeSelector?.['kubernetes.io/os'], 'windows');
  assert.equal(out.spec?.tolerations?.length, 1);
});

test('the Anthos taint form is honoured', () => {
  const anthos = parseConfig(
    'placement: { windowsTaint: { key: node.kubernetes.io/os, value: windows, effect: NoSchedule } }',
  );
  const input = pod({ nodeSelector: { 'kubernetes.io/os': 'windows' } });
  const out = applyPatch(
    input,
    mutatePod(input, { config: anthos, runtimeClasses: noRuntimeClasses }).patch,
  );
  assert.deepEqual(out.spec?.tolerations, [
    { key: 'node.kubernetes.io/os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' },
  ]);
});

test('required node affinity on kubernetes.io/os and a Windows RuntimeClass both mark a Windows pod', () => {
  const byAffinity = pod({
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['windows'] }],
            },
            {
              matchExpressions: [
                { key: 'kubernetes.io/os', operator: 'In', values: ['windows'] },
                { key: 'zone', operator: 'In', values: ['a'] },
              ],
            },
          ],
        },
      },
    },
  });
  const m = mutatePod(byAffinity, {
    config,
    runtimeClasses: noRuntimeClasses,
    allowedBuilds: ['10.0.17763'],
  });
  assert.equal(m.podOs?.os, 'windows');
  const out = applyPatch(byAffinity, m.patch);
  for (const term of out.spec!.affinity!.nodeAffinity!
    .requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms) {
    assert.ok(
      term.matchExpressions!.some((e) => e.key === 'node.kubernetes.io/windows-build'),
      'every ORed term gets the build',
    );
  }
  const byClass = pod({ runtimeClassName: 'windows-any' });
  assert.equal(mutatePod(byClass, { config, runtimeClasses }).podOs?.os, 'windows');
});

test('a build pinned by the user or by a RuntimeClass is left alone', () => {
  const pinned = pod({
    nodeSelector: {
      'kubernetes.io/os': 'windows',
      'node.kubernetes.io/windows-build': '10.0.17763',
    },
  });
  const m = mutatePod(pinned, {
    config,
    runtimeClasses: noRuntimeClasses,
    allowedBuilds: ['10.0.20348'],
  });
  assert.ok(!m.changes.some((c) => c.includes('affinity')));
  const viaClass = pod({
    runtimeClassName: 'windows-2019',
    nodeSelector: { 'kubernetes.io/os': 'windows' },
  });
  assert.ok(
    !mutatePod(viaClass, { config, runtimeClasses, allowedBuilds: ['10.0.20348'] }).changes.some(
      (c) => c.includes('affinity'),
    ),
  );
});

test('HostProcess pods are not constrained by build', () => {
  const hpc = pod({
    nodeSelector: { 'kubernetes.io/os': 'windows' },
    hostNetwork: true,
    securityContext: {
      windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' },
    },
  });
  assert.ok(
    !mutatePod(hpc, {
      config,
      runtimeClasses: noRuntimeClasses,
      allowedBuilds: ['10.0.20348'],
    }).changes.some((c) => c.includes('affinity')),
  );
});

test('Linux pods are untouched unless the Linux-tainted mode is on', () => {
  const linux = pod({});
  assert.deepEqual(mutatePod(linux, { config, runtimeClasses: noRuntimeClasses }).patch, []);
  const rancher = parseConfig(
    'placement: { linuxTaint: { enabled: true, key: cattle.io/os, value: linux, effect: NoSchedule } }',
  );
  const out = applyPatch(
    linux,
    mutatePod(linux, { config: rancher, runtimeClasses: noRuntimeClasses }).patch,
  );
  assert.deepEqual(out.spec?.tolerations, [
    { key: 'cattle.io/os', operator: 'Equal', value: 'linux', effect: 'NoSchedule' },
  ]);
  const windowsUnderRancher = pod({ nodeSelector: { 'kubernetes.io/os': 'windows' } });
  const w = applyPatch(
    windowsUnderRancher,
    mutatePod(windowsUnderRancher, { config: rancher, runtimeClasses: noRuntimeClasses }).patch,
  );
  assert.ok(
    !w.spec?.tolerations?.some((t) => t.key === 'cattle.io/os'),
    'Windows pods do not get the Linux toleration',
  );
});

test('an existing toleration that already covers the taint is enough', () => {
  for (const toleration of [
    { operator: 'Exists' },
    { key: 'os', operator: 'Exists' },
    { key: 'os', operator: 'Equal', value: 'windows' },
  ]) {
    const input = pod({
      nodeSelector: { 'kubernetes.io/os': 'windows' },
      os: { name: 'windows' },
      tolerations: [toleration],
    });
    assert.deepEqual(
      mutatePod(input, { config, runtimeClasses: noRuntimeClasses }).patch,
      [],
      JSON.stringify(toleration),
    );
  }
});

// Property tests over generated pods.

const label = fc.constantFrom(
  'kubernetes.io/os',
  'node.kubernetes.io/windows-build',
  'zone',
  'team',
  'a/b~c',
);
const podArbitrary: fc.Arbitrary<k8s.V1Pod> = fc.record(
  {
    metadata: fc.record(
      {
        name: fc.constant('p'),
        annotations: fc.dictionary(fc.constantFrom('x', mutationsAnnotation, 'a/b'), fc.string()),
        labels: fc.dictionary(label, fc.string()),
      },
      { requiredKeys: ['name'] },
    ),
    spec: fc.record(
      {
        containers: fc.array(fc.record({ name: fc.string({ minLength: 1 }), image: fc.string() }), {
          minLength: 1,
          maxLength: 3,
        }),
        nodeSelector: fc.dictionary(label, fc.constantFrom('windows', 'linux', '10.0.17763', 'x')),
        os: fc.record({ name: fc.constantFrom('windows', 'linux') }),
        tolerations: fc.array(
          fc.record(
            {
              key: fc.constantFrom('os', 'node.kubernetes.io/os', 'cattle.io/os', 'other'),
              operator: fc.constantFrom('Equal', 'Exists'),
              value: fc.constantFrom('windows', 'linux', ''),
              effect: fc.constantFrom('NoSchedule', 'NoExecute'),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 3 },
        ),
        runtimeClassName: fc.constantFrom('windows-2019', 'windows-any', 'runc'),
        affinity: fc.record(
          {
            nodeAffinity: fc.record(
              {
                requiredDuringSchedulingIgnoredDuringExecution: fc.record({
                  nodeSelectorTerms: fc.array(
                    fc.record(
                      {
                        matchExpressions: fc.array(
                          fc.record({
                            key: label,
                            operator: fc.constantFrom('In', 'NotIn'),
                            values: fc.array(fc.constantFrom('windows', 'linux', '10.0.20348'), {
                              minLength: 1,
                              maxLength: 2,
                            }),
                          }),
                          { maxLength: 2 },
                        ),
                      },
                      { requiredKeys: [] },
                    ),
                    { maxLength: 2 },
                  ),
                }),
              },
              { requiredKeys: [] },
            ),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: ['containers'] },
    ),
  },
  { requiredKeys: ['metadata', 'spec'] },
) as fc.Arbitrary<k8s.V1Pod>;

const configArbitrary = fc.constantFrom(
  defaultConfig(),
  parseConfig(
    'placement: { windowsTaint: { key: node.kubernetes.io/os, value: windows, effect: NoSchedule }, linuxTaint: { enabled: true, key: cattle.io/os, value: linux, effect: NoSchedule } }',
  ),
);
const buildsArbitrary = fc.option(
  fc.subarray(['10.0.17763', '10.0.20348', '10.0.26100'], { minLength: 1 }),
  { nil: undefined },
);

function at(value: unknown, path: string): unknown {
  return path
    .split('/')
    .slice(1)
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], value);
}

/** Every leaf of `value` as [path, leaf]. */
function leaves(value: unknown, path = ''): [string, unknown][] {
  if (value === null || typeof value !== 'object') return [[path, value]];
  const entries = Object.entries(value as object);
  if (entries.length === 0) return [[path, value]];
  return entries.flatMap(([k, v]) => leaves(v, `${path}/${k}`));
}

test('property: the patch is idempotent — admitting the mutated pod changes nothing', (t) => {
  const seed = testSeed(t);
  fc.assert(
    fc.property(podArbitrary, configArbitrary, buildsArbitrary, (p, cfg, builds) => {
      const input = { config: cfg, runtimeClasses, allowedBuilds: builds };
      const once = applyPatch(p, mutatePod(p, input).patch);
      assert.deepEqual(mutatePod(once, input).patch, []);
    }),
    { numRuns: 500, seed },
  );
});

test('property: the patch never removes or changes a field the user set', (t) => {
  const seed = testSeed(t);
  fc.assert(
    fc.property(podArbitrary, configArbitrary, buildsArbitrary, (p, cfg, builds) => {
      const m = mutatePod(p, { config: cfg, runtimeClasses, allowedBuilds: builds });
      assert.ok(
        m.patch.every((op) => op.op === 'add'),
        'only add operations',
      );
      const out = applyPatch(p, m.patch);
      const after = new Map(leaves(out));
      for (const [path, value] of leaves(p)) {
        // The annotation is the one field we extend: it must still start with the user's text.
        if (path === `/metadata/annotations/${mutationsAnnotation}`) {
          assert.ok(String(after.get(path)).startsWith(String(value)));
          continue;
        }
        // Empty objects and arrays may gain members; everything else keeps its place and value.
        if (value !== null && typeof value === 'object') {
          const now = at(out, path);
          assert.equal(Array.isArray(now), Array.isArray(value), `kept ${path}`);
          assert.equal(typeof now, 'object', `kept ${path}`);
          continue;
        }
        assert.ok(after.has(path), `kept ${path}`);
        assert.deepEqual(after.get(path), value, `unchanged ${path}`);
      }
    }),
    { numRuns: 500, seed },
  );
});
