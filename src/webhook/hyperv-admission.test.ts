import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { parseConfig } from '../config/winfleet-config.ts';
import { silentLogger } from '../log/logger.ts';
import { isCompatibleBuild } from '../windows/compatibility.ts';
import { hyperVIsolationLabel } from '../windows/isolation.ts';
import type { AdmissionRequest } from './admission-review.ts';
import { hyperVPlacement } from './hyperv-placement.ts';
import { applyPatch } from './json-patch.ts';
import type { ImageFacts } from './placement.ts';
import { admitPodMutation, admitPodValidation, type PodAdmissionDeps } from './pod-admission.ts';

const versions: Record<string, string[]> = {
  'win2019:1': ['10.0.17763.6054'],
  'win2022:1': ['10.0.20348.2582'],
  'win2025:1': ['10.0.26100.1742'],
};

const hyperVClass = {
  'kubernetes.io/os': 'windows',
  [hyperVIsolationLabel]: 'true',
};
const classes: Record<string, Record<string, string>> = {
  'windows-2019-hyperv': hyperVClass,
  'windows-2022-hyperv': hyperVClass,
  'windows-2022': {
    'kubernetes.io/os': 'windows',
    'node.kubernetes.io/windows-build': '10.0.20348',
  },
};

const enforce = parseConfig('images:\n  compatibility: enforce\n');

function deps(
  ready: string[],
  hyperV: string[],
  runtimeClasses: Record<string, Record<string, string>> = classes,
): PodAdmissionDeps {
  return {
    config: () => enforce,
    operatorNamespace: 'winfleet-system',
    runtimeClasses: (name) => runtimeClasses[name],
    readyWindowsBuilds: () => ready,
    readyHyperVBuilds: () => hyperV,
    resolveImages: async (pod) =>
      (pod.spec?.containers ?? []).map(
        (c, i): ImageFacts => ({
          image: c.image!,
          path: `spec.containers[${i}].image`,
          state: 'resolved',
          windowsVersions: versions[c.image!]!,
          hasOtherOs: false,
        }),
      ),
    isCompatible: isCompatibleBuild,
    gmsaCredentialSpecs: async () => undefined,
    reviewGmsaUse: async () => ({ allowed: true }),
    namespaceOptedOut: () => false,
    log: silentLogger,
  };
}

function request(image: string, spec: Partial<k8s.V1PodSpec> = {}): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'apps',
    object: {
      metadata: { name: 'p' },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [{ name: 'c', image }],
        ...spec,
      },
    } as Record<string, unknown>,
  };
}

/** Mutates, then validates the mutated pod, as the API server does. */
async function admit(req: AdmissionRequest, d: PodAdmissionDeps) {
  const mutation = await admitPodMutation(req, d);
  const pod = applyPatch(req.object as k8s.V1Pod, mutation.patch ?? []);
  const validation = await admitPodValidation(
    { ...req, object: pod as Record<string, unknown> },
    d,
  );
  return { mutation, pod, validation };
}

function affinityBuilds(pod: k8s.V1Pod): string[] | undefined {
  return pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms?.[0]?.matchExpressions?.find(
    (e) => e.key === 'node.kubernetes.io/windows-build',
  )?.values;
}

test('a 2019 image on a 2022 pool that allows Hyper-V gets the Hyper-V class, a warning, and passes', async () => {
  const { mutation, pod, validation } = await admit(
    request('win2019:1'),
    deps(['10.0.20348'], ['10.0.20348']),
  );
  assert.equal(pod.spec?.runtimeClassName, 'windows-2019-hyperv');
  assert.equal(pod.spec?.nodeSelector?.[hyperVIsolationLabel], 'true');
  assert.deepEqual(affinityBuilds(pod), ['10.0.20348']);
  assert.equal(mutation.warnings?.length, 1);
  assert.match(mutation.warnings![0]!, /^spec\.runtimeClassName: set to windows-2019-hyperv/);
  assert.match(mutation.warnings![0]!, /win2019:1/);
  assert.equal(validation.allowed, true, validation.message);
});

test('without the opt-in the pod is refused naming the image, its build and spec.isolation.hyperV', async () => {
  const { pod, validation } = await admit(request('win2019:1'), deps(['10.0.20348'], []));
  assert.equal(pod.spec?.runtimeClassName, undefined);
  assert.equal(validation.allowed, false);
  assert.match(validation.message!, /win2019:1/);
  assert.match(validation.message!, /10\.0\.17763/);
  assert.match(validation.message!, /spec\.isolation\.hyperV: true on a WindowsNodePool/);
  assert.match(validation.message!, /only under Hyper-V isolation/);
});

test('an image a node runs under process isolation never gets Hyper-V', async () => {
  const { mutation, pod } = await admit(request('win2022:1'), deps(['10.0.20348'], ['10.0.20348']));
  assert.equal(pod.spec?.runtimeClassName, undefined);
  assert.equal(mutation.warnings, undefined);
  // A 2019 image with a Ready 2019 node: process isolation there, not Hyper-V on 2022.
  const old = await admit(request('win2019:1'), deps(['10.0.17763', '10.0.20348'], ['10.0.20348']));
  assert.equal(old.pod.spec?.runtimeClassName, undefined);
  assert.deepEqual(affinityBuilds(old.pod), ['10.0.17763']);
});

test('the class is assigned only once it exists, and only when it schedules onto Hyper-V nodes', async () => {
  const { pod, validation } = await admit(
    request('win2019:1'),
    deps(['10.0.20348'], ['10.0.20348'], {}),
  );
  assert.equal(pod.spec?.runtimeClassName, undefined);
  assert.equal(validation.allowed, false);
  // A user's own class of that name, selecting other nodes, is not handed out.
  const users = await admit(
    request('win2019:1'),
    deps(['10.0.20348'], ['10.0.20348'], {
      'windows-2019-hyperv': { 'kubernetes.io/os': 'windows', pool: 'mine' },
    }),
  );
  assert.equal(users.pod.spec?.runtimeClassName, undefined);
});

test('a HostProcess pod is never put under Hyper-V isolation', async () => {
  const req = request('win2019:1', {
    hostNetwork: true,
    securityContext: {
      windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' },
    },
  });
  const mutation = await admitPodMutation(req, deps(['10.0.20348'], ['10.0.20348']));
  assert.ok(!JSON.stringify(mutation.patch).includes('runtimeClassName'));
});

// Attacker: a pod names a Hyper-V class to reach nodes it should not. The class's nodeSelector
// (merged by the API server) keeps it to Hyper-V nodes; the webhook keeps it to the Hyper-V
// builds that run its image under Hyper-V isolation, never the process-isolation builds.
test('a pod naming a Hyper-V class is kept to Hyper-V nodes that run its images', async () => {
  const req = request('win2019:1', {
    runtimeClassName: 'windows-2019-hyperv',
    nodeSelector: { 'kubernetes.io/os': 'windows', [hyperVIsolationLabel]: 'true' },
  });
  const { pod, validation } = await admit(req, deps(['10.0.17763', '10.0.20348'], ['10.0.20348']));
  // Old code: affinity on 10.0.17763 (process isolation), where no Hyper-V node is.
  assert.deepEqual(affinityBuilds(pod), ['10.0.20348']);
  assert.equal(validation.allowed, true, validation.message);
  // A 2025 image under a Hyper-V class on 2022 Hyper-V nodes: refused, not sent anywhere.
  const newer = await admit(
    request('win2025:1', { runtimeClassName: 'windows-2019-hyperv' }),
    deps(['10.0.20348', '10.0.26100'], ['10.0.20348']),
  );
  assert.equal(affinityBuilds(newer.pod), undefined);
  assert.equal(newer.validation.allowed, false);
  assert.match(newer.validation.message!, /no Ready Hyper-V node can run win2025:1/);
});

test('a pod that names its own RuntimeClass keeps it, and is told how to get Hyper-V', async () => {
  const { pod, validation } = await admit(
    request('win2019:1', { runtimeClassName: 'windows-2022' }),
    deps(['10.0.20348'], ['10.0.20348']),
  );
  assert.equal(pod.spec?.runtimeClassName, 'windows-2022');
  assert.equal(pod.spec?.nodeSelector?.[hyperVIsolationLabel], undefined);
  assert.equal(validation.allowed, false);
  assert.match(
    validation.message!,
    /remove spec\.runtimeClassName so winfleet assigns windows-2019-hyperv/,
  );
});

test('hyperVPlacement: one build for every image, no newer than the node', () => {
  const facts = (image: string, v: string[]): ImageFacts => ({
    image,
    path: 'p',
    state: 'resolved',
    windowsVersions: v,
    hasOtherOs: false,
  });
  assert.deepEqual(hyperVPlacement([facts('a', ['10.0.17763.1'])], ['10.0.20348', '10.0.26100']), {
    imageBuild: '10.0.17763',
    runtimeClass: 'windows-2019-hyperv',
    nodeBuilds: ['10.0.20348', '10.0.26100'],
  });
  // Containers of one pod share a utility VM: 2019 and 2022 images together do not fit.
  assert.equal(
    hyperVPlacement([facts('a', ['10.0.17763.1']), facts('b', ['10.0.20348.1'])], ['10.0.26100']),
    undefined,
  );
  // A multi-arch index: the newest shared build wins.
  assert.equal(
    hyperVPlacement(
      [facts('a', ['10.0.17763.1', '10.0.20348.1']), facts('b', ['10.0.20348.9'])],
      ['10.0.26100'],
    )?.runtimeClass,
    'windows-2022-hyperv',
  );
  assert.equal(hyperVPlacement([facts('a', ['10.0.26100.1'])], ['10.0.20348']), undefined);
  assert.equal(hyperVPlacement([facts('a', ['junk'])], ['10.0.20348']), undefined);
  assert.equal(hyperVPlacement([facts('a', [])], ['10.0.20348']), undefined);
});
