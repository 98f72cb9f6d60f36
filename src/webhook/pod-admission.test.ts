import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { parseConfig, type WinfleetConfig } from '../config/winfleet-config.ts';
import { silentLogger } from '../log/logger.ts';
import { isCompatibleBuild } from '../windows/compatibility.ts';
import type { AdmissionRequest } from './admission-review.ts';
import { maxWarningRunes } from './admission-warning.ts';
import { applyPatch } from './json-patch.ts';
import type { ImageFacts } from './placement.ts';
import { admitPodMutation, admitPodValidation, type PodAdmissionDeps } from './pod-admission.ts';

const versions: Record<string, Omit<ImageFacts, 'image' | 'path'>> = {
  'win2019:1': { state: 'resolved', windowsVersions: ['10.0.17763.6054'], hasOtherOs: false },
  'win2022:1': { state: 'resolved', windowsVersions: ['10.0.20348.2582'], hasOtherOs: false },
  'win2025:1': { state: 'resolved', windowsVersions: ['10.0.26100.1742'], hasOtherOs: false },
  'linux:1': { state: 'resolved', windowsVersions: [], hasOtherOs: true },
  'gone:1': {
    state: 'unknown',
    reason: 'Cannot read the platforms of "gone:1": registry.example.com is unreachable',
    windowsVersions: [],
    hasOtherOs: false,
  },
};

function deps(
  config: WinfleetConfig,
  readyBuilds = ['10.0.17763', '10.0.20348'],
): PodAdmissionDeps {
  return {
    config: () => config,
    operatorNamespace: 'winfleet-system',
    runtimeClasses: () => undefined,
    readyWindowsBuilds: () => readyBuilds,
    resolveImages: async (pod) =>
      (pod.spec?.containers ?? []).map((c, i) => ({
        image: c.image!,
        path: `spec.containers[${i}].image`,
        ...versions[c.image!]!,
      })),
    isCompatible: isCompatibleBuild,
    gmsaCredentialSpecs: async () => undefined,
    reviewGmsaUse: async () => ({ allowed: true }),
    namespaceOptedOut: (ns) => ns === 'opted-out',
    log: silentLogger,
  };
}

function request(
  spec: Partial<k8s.V1PodSpec>,
  namespace = 'apps',
  labels?: Record<string, string>,
): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace,
    object: {
      metadata: { name: 'p', labels },
      spec: { containers: [{ name: 'c', image: 'win2022:1' }], ...spec },
    } as Record<string, unknown>,
  };
}

const windows = { nodeSelector: { 'kubernetes.io/os': 'windows' } };
const config = parseConfig('');

test('a 2022 image is constrained to builds that can run it; a 2019 image to 2019', async () => {
  const d = await admitPodMutation(request(windows), deps(config));
  const pod = applyPatch(request(windows).object as k8s.V1Pod, d.patch!);
  assert.deepEqual(
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]?.values,
    ['10.0.20348', '10.0.26100'],
  );
  const old = await admitPodMutation(
    request({ ...windows, containers: [{ name: 'c', image: 'win2019:1' }] }),
    deps(config),
  );
  assert.ok(JSON.stringify(old.patch).includes('"values":["10.0.17763"]'));
});

test('excluded and opted-out namespaces are left alone', async () => {
  for (const r of [
    request(windows, 'kube-system'),
    request(windows, 'winfleet-system'),
    request(windows, 'opted-out'),
  ]) {
    assert.deepEqual(await admitPodMutation(r, deps(config)), { allowed: true }, r.namespace);
    assert.deepEqual(await admitPodValidation(r, deps(config)), { allowed: true });
  }
});

test('a pod cannot opt itself out with the opt-out label: it is still validated', async () => {
  const invalid = request({ ...windows, hostPID: true }, 'apps', {
    'winfleet.io/webhook': 'disabled',
  });
  const decision = await admitPodValidation(invalid, deps(config));
  assert.equal(decision.allowed, false);
  assert.match(decision.message ?? '', /spec\.hostPID/);
  const mutated = await admitPodMutation(invalid, deps(config));
  assert.ok(mutated.patch, 'the pod was mutated like any other');
});

test('an unreachable registry: admitted with one warning, unconstrained; enforce rejects naming the field', async () => {
  const r = request({ ...windows, containers: [{ name: 'c', image: 'gone:1' }] });
  const m = await admitPodMutation(r, deps(config));
  assert.equal(m.allowed, true);
  assert.equal(m.warnings, undefined, 'the validating webhook reports it, once');
  assert.ok(!JSON.stringify(m.patch).includes('windows-build'));
  const warn = await admitPodValidation(r, deps(config));
  assert.equal(warn.allowed, true);
  assert.deepEqual(warn.warnings, [
    'spec.containers[0].image: check the registry or its mirror; Cannot read the platforms of "gone:1": registry.example.com is unreachable; the pod is not constrained to compatible nodes',
  ]);
  const enforce = await admitPodValidation(
    r,
    deps(parseConfig('images: { compatibility: enforce }')),
  );
  assert.equal(enforce.allowed, false);
  assert.match(
    enforce.message!,
    /spec\.containers\[0\]\.image: check the registry or its mirror, or set images\.compatibility: warn; Cannot read the platforms of "gone:1": registry\.example\.com is unreachable/,
  );
});

test('a Linux-only image in a Windows pod is reported', async () => {
  const r = request({ ...windows, containers: [{ name: 'c', image: 'linux:1' }] });
  const v = await admitPodValidation(r, deps(config));
  assert.deepEqual(v.warnings, [
    'spec.containers[0].image: use a Windows image or run the pod on Linux; linux:1 has no Windows variant',
  ]);
});

test('no Ready node of a compatible build: warned by default, rejected in enforce mode', async () => {
  // A 2025 image: no 2022 node runs it, under either isolation (a 2019 image would run under
  // Hyper-V isolation: hyperv-admission.test.ts).
  const r = request({ ...windows, containers: [{ name: 'c', image: 'win2025:1' }] });
  const onlyNew = ['10.0.20348'];
  const warn = await admitPodValidation(r, deps(config, onlyNew));
  assert.equal(warn.allowed, true);
  assert.deepEqual(warn.warnings, [
    'spec.containers[0].image: use an image built for 10.0.20348 (Windows Server 2022), or add a node that can run it; no Ready Windows node can run win2025:1 (built for 10.0.26100.1742)',
  ]);
  const enforce = await admitPodValidation(
    r,
    deps(parseConfig('images: { compatibility: enforce }'), onlyNew),
  );
  assert.equal(enforce.allowed, false);
  assert.equal(enforce.code, 422);
});

test('each warning fits the API server limit with its fix whole, however long the image', async () => {
  const long = `registry.example.com/${'team/'.repeat(40)}app:1`;
  versions[long] = { state: 'resolved', windowsVersions: ['10.0.26100.1742'], hasOtherOs: false };
  const r = request({
    ...windows,
    containers: [
      { name: 'a', image: long },
      { name: 'b', image: 'linux:1' },
    ],
  });
  const v = await admitPodValidation(r, deps(config, ['10.0.20348']));
  assert.equal(v.warnings?.length, 2, 'one warning per problem');
  for (const w of v.warnings!) assert.ok([...w].length <= maxWarningRunes, w);
  assert.match(
    v.warnings!.find((w) => w.startsWith('spec.containers[0]'))!,
    /^spec\.containers\[0\]\.image: use an image built for 10\.0\.20348 \(Windows Server 2022\), or add a node that can run it; no Ready Windows node can run registry\.example\.com\/team\/.*…$/,
  );
});

test('a gMSA credential spec name without the CRD: admitted with a warning naming the CRD', async () => {
  const named = request({
    ...windows,
    securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapp1' } },
  });
  const v = await admitPodValidation(named, deps(config));
  assert.equal(v.allowed, true);
  assert.deepEqual(v.warnings, [
    'spec.securityContext.windowsOptions.gmsaCredentialSpecName: install the gMSA webhook and CRD gmsacredentialspecs.windows.k8s.io, or remove the name; without the CRD nothing resolves "webapp1" and the container gets no gMSA identity',
  ]);
  const withCrd = await admitPodValidation(named, {
    ...deps(config),
    gmsaCredentialSpecs: async () => new Set(['other']),
  });
  assert.equal(withCrd.allowed, false);
  assert.match(withCrd.message!, /GMSACredentialSpec "webapp1" does not exist/);
  const inline = request({
    ...windows,
    securityContext: {
      windowsOptions: { gmsaCredentialSpecName: 'webapp1', gmsaCredentialSpec: '{}' },
    },
  });
  assert.deepEqual((await admitPodValidation(inline, deps(config))).warnings, []);
});

test('opt-in: a pod that says nothing but whose images are all Windows is treated as Windows', async () => {
  const bare = request({});
  assert.deepEqual((await admitPodMutation(bare, deps(config))).patch, []);
  const optIn = parseConfig('images: { detectWindowsFromImages: true }');
  const d = await admitPodMutation(bare, deps(optIn));
  const pod = applyPatch(bare.object as k8s.V1Pod, d.patch!);
  assert.equal(pod.spec?.os?.name, 'windows');
  assert.match(
    pod.metadata?.annotations?.['winfleet.io/mutations'] ?? '',
    /added nodeSelector kubernetes\.io\/os=windows/,
  );
  const linux = await admitPodMutation(
    request({ containers: [{ name: 'c', image: 'linux:1' }] }),
    deps(optIn),
  );
  assert.deepEqual(linux.patch, [], 'a Linux image stays a Linux pod');
});

test('only Pod CREATE is handled; other kinds and operations pass through', async () => {
  const r = request(windows);
  assert.deepEqual(await admitPodMutation({ ...r, operation: 'UPDATE' }, deps(config)), {
    allowed: true,
  });
  assert.deepEqual(
    await admitPodMutation(
      { ...r, kind: { group: 'apps', version: 'v1', kind: 'Deployment' } },
      deps(config),
    ),
    { allowed: true },
  );
});

test('attacker: an ephemeral container cannot name a gMSA credential spec its pod’s ServiceAccount may not use (issue 33)', async () => {
  const asked: string[] = [];
  const gmsaDeps: PodAdmissionDeps = {
    ...deps(config),
    gmsaCredentialSpecs: async () => new Set(['webapp1', 'domain-admin']),
    reviewGmsaUse: async ({ credentialSpec, serviceAccount }) => {
      asked.push(`${serviceAccount}:${credentialSpec}`);
      return { allowed: credentialSpec === 'webapp1' };
    },
  };
  const base = {
    metadata: { name: 'p', namespace: 'apps' },
    spec: {
      serviceAccountName: 'web',
      containers: [{ name: 'c', image: 'win2022:1' }],
      ephemeralContainers: [
        {
          name: 'debugger-1',
          image: 'win2022:1',
          securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapp1' } },
        },
      ],
    },
  };
  const withDebugger = (gmsaCredentialSpecName: string) => ({
    ...base,
    spec: {
      ...base.spec,
      ephemeralContainers: [
        ...base.spec.ephemeralContainers,
        {
          name: 'debugger-2',
          image: 'win2022:1',
          securityContext: { windowsOptions: { gmsaCredentialSpecName } },
        },
      ],
    },
  });
  const update = (object: object): AdmissionRequest => ({
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'UPDATE',
    subResource: 'ephemeralcontainers',
    namespace: 'apps',
    name: 'p',
    object: object as Record<string, unknown>,
    oldObject: base as Record<string, unknown>,
  });
  const denied = await admitPodValidation(update(withDebugger('domain-admin')), gmsaDeps);
  assert.equal(denied.allowed, false);
  assert.equal(denied.code, 403);
  assert.match(
    denied.message!,
    /spec\.ephemeralContainers\[1\]\.securityContext\.windowsOptions\.gmsaCredentialSpecName: ServiceAccount apps\/web may not use GMSACredentialSpec "domain-admin"/,
  );
  // Only the new container is asked about; the one already there was admitted before.
  assert.deepEqual(asked, ['web:domain-admin']);
  asked.length = 0;
  assert.equal((await admitPodValidation(update(withDebugger('webapp1')), gmsaDeps)).allowed, true);
  assert.deepEqual(asked, ['web:webapp1']);
  const unknown = await admitPodValidation(update(withDebugger('nope')), gmsaDeps);
  assert.equal(unknown.allowed, false);
  assert.match(unknown.message!, /GMSACredentialSpec "nope" does not exist/);
  // A failing review refuses, as at CREATE.
  const failing = await admitPodValidation(update(withDebugger('webapp1')), {
    ...gmsaDeps,
    reviewGmsaUse: async () => {
      throw new Error('timed out');
    },
  });
  assert.equal(failing.allowed, false);
  assert.match(failing.message!, /cannot check that ServiceAccount apps\/web may use/);
  // Other updates of a pod are not the webhook's (it is registered for this subresource only).
  assert.equal(
    (
      await admitPodValidation(
        { ...update(withDebugger('domain-admin')), subResource: 'status' },
        gmsaDeps,
      )
    ).allowed,
    true,
  );
});
