/**
 * The gMSA checks of the Pod webhook: placement on gMSA-ready nodes, and the refusal of a pod
 * whose ServiceAccount may not `use` a credential spec it names — from the attacker's side: a
 * ServiceAccount allowed credential spec A that names B, names it in one container only, in an
 * init or ephemeral container, on a pod that does not say it is Windows, or when the
 * authorizer cannot be asked.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { gmsaReadyLabel } from '../api/node-annotations.ts';
import { parseConfig } from '../config/winfleet-config.ts';
import { silentLogger } from '../log/logger.ts';
import type { AdmissionRequest } from './admission-review.ts';
import {
  type GmsaUseQuestion,
  type GmsaUseReview,
  gmsaUseReviewer,
  gmsaUseReviewSpec,
} from './gmsa-authorization.ts';
import { applyPatch } from './json-patch.ts';
import { mutationsAnnotation } from './mutate-pod.ts';
import { admitPodMutation, admitPodValidation, type PodAdmissionDeps } from './pod-admission.ts';

const config = parseConfig('');

/** An authorizer that lets apps/app use only credential spec "webapp-a". */
function authorizer(asked: GmsaUseQuestion[] = []): GmsaUseReview {
  return async (question) => {
    asked.push(question);
    const allowed =
      question.namespace === 'apps' &&
      question.serviceAccount === 'app' &&
      question.credentialSpec === 'webapp-a';
    return allowed
      ? { allowed, reason: 'RBAC: allowed by RoleBinding "use-webapp-a/apps"' }
      : { allowed };
  };
}

function deps(review: GmsaUseReview = authorizer()): PodAdmissionDeps {
  return {
    config: () => config,
    operatorNamespace: 'winfleet-system',
    runtimeClasses: () => undefined,
    readyWindowsBuilds: () => ['10.0.20348'],
    isCompatible: () => true,
    gmsaCredentialSpecs: async () => new Set(['webapp-a', 'webapp-b']),
    reviewGmsaUse: review,
    namespaceOptedOut: (ns) => ns === 'opted-out',
    log: silentLogger,
  };
}

const gmsa = (name: string) => ({ windowsOptions: { gmsaCredentialSpecName: name } });

function request(spec: Partial<k8s.V1PodSpec>, namespace = 'apps'): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace,
    object: {
      metadata: { name: 'p' },
      spec: {
        serviceAccountName: 'app',
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [{ name: 'c', image: 'app:1' }],
        ...spec,
      },
    } as Record<string, unknown>,
  };
}

test('the SubjectAccessReview asks what windows-gmsa asks', () => {
  assert.deepEqual(
    gmsaUseReviewSpec({ namespace: 'apps', serviceAccount: 'app', credentialSpec: 'webapp-a' }),
    {
      user: 'system:serviceaccount:apps:app',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:apps'],
      resourceAttributes: {
        namespace: 'apps',
        verb: 'use',
        group: 'windows.k8s.io',
        version: 'v1',
        resource: 'gmsacredentialspecs',
        name: 'webapp-a',
      },
    },
  );
});

test('a ServiceAccount allowed credential spec A is admitted naming A', async () => {
  const asked: GmsaUseQuestion[] = [];
  const v = await admitPodValidation(
    request({ securityContext: gmsa('webapp-a') }),
    deps(authorizer(asked)),
  );
  assert.equal(v.allowed, true);
  assert.deepEqual(asked, [
    { namespace: 'apps', serviceAccount: 'app', credentialSpec: 'webapp-a' },
  ]);
});

test('attacker side: allowed A, it names B; refused with 403 and the missing RBAC named', async () => {
  const v = await admitPodValidation(request({ securityContext: gmsa('webapp-b') }), deps());
  assert.equal(v.allowed, false);
  assert.equal(v.code, 403);
  assert.equal(
    v.message,
    'winfleet: pod p is not allowed:\n- spec.securityContext.windowsOptions.gmsaCredentialSpecName: ServiceAccount apps/app may not use GMSACredentialSpec "webapp-b"; grant it with a Role or ClusterRole rule {apiGroups: [windows.k8s.io], resources: [gmsacredentialspecs], verbs: [use], resourceNames: [webapp-b]} bound to ServiceAccount app in namespace apps (a RoleBinding there), e.g. kubectl create clusterrole use-gmsa-webapp-b --verb=use --resource=gmsacredentialspecs.windows.k8s.io --resource-name=webapp-b && kubectl create rolebinding use-gmsa-webapp-b -n apps --clusterrole=use-gmsa-webapp-b --serviceaccount=apps:app',
  );
});

test('attacker side: B named in one container only, or an init or ephemeral container, is refused', async () => {
  for (const spec of [
    {
      securityContext: gmsa('webapp-a'),
      containers: [
        { name: 'ok', image: 'app:1' },
        { name: 'sneaky', image: 'app:1', securityContext: gmsa('webapp-b') },
      ],
    },
    { initContainers: [{ name: 'init', image: 'app:1', securityContext: gmsa('webapp-b') }] },
    {
      ephemeralContainers: [
        { name: 'debug', image: 'app:1', securityContext: gmsa('webapp-b') },
      ] as k8s.V1EphemeralContainer[],
    },
  ]) {
    const v = await admitPodValidation(request(spec), deps());
    assert.equal(v.allowed, false, JSON.stringify(spec));
    assert.match(
      v.message!,
      /- spec\.(containers\[1\]|initContainers\[0\]|ephemeralContainers\[0\])\.securityContext\.windowsOptions\.gmsaCredentialSpecName: ServiceAccount apps\/app may not use GMSACredentialSpec "webapp-b"/,
    );
    assert.doesNotMatch(v.message!, /"webapp-a"/, 'the allowed one is not reported');
  }
});

test('attacker side: the check does not depend on the pod saying it is Windows', async () => {
  // No OS anywhere: naming a credential spec makes it a Windows pod.
  const bare = request({ nodeSelector: undefined, securityContext: gmsa('webapp-b') });
  assert.equal((await admitPodValidation(bare, deps())).allowed, false);
  // Declared Linux (a Linux kubelet ignores windowsOptions; windows-gmsa checks it anyway).
  const linux = request({
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    securityContext: gmsa('webapp-b'),
  });
  const v = await admitPodValidation(linux, deps());
  assert.equal(v.allowed, false);
  assert.equal(v.code, 403);
});

test('another namespace’s or another ServiceAccount’s grant does not count; the default SA is checked', async () => {
  const other = await admitPodValidation(
    request({ securityContext: gmsa('webapp-a') }, 'other'),
    deps(),
  );
  assert.match(
    other.message!,
    /ServiceAccount other\/app may not use GMSACredentialSpec "webapp-a"/,
  );
  const asked: GmsaUseQuestion[] = [];
  await admitPodValidation(
    request({ serviceAccountName: undefined, securityContext: gmsa('webapp-a') }),
    deps(authorizer(asked)),
  );
  assert.equal(asked[0]!.serviceAccount, 'default');
});

test('each name is reviewed once however many fields name it; a missing spec is refused as missing', async () => {
  const asked: GmsaUseQuestion[] = [];
  const v = await admitPodValidation(
    request({
      securityContext: gmsa('webapp-a'),
      containers: [
        { name: 'a', image: 'app:1', securityContext: gmsa('webapp-a') },
        { name: 'b', image: 'app:1', securityContext: gmsa('nope') },
      ],
    }),
    deps(authorizer(asked)),
  );
  assert.deepEqual(
    asked.map((q) => q.credentialSpec),
    ['webapp-a'],
  );
  assert.equal(v.code, 422);
  assert.match(v.message!, /GMSACredentialSpec "nope" does not exist/);
});

test('fail closed: a review that fails refuses the pod and says the check could not be made', async () => {
  const v = await admitPodValidation(
    request({ securityContext: gmsa('webapp-a') }),
    deps(async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
    }),
  );
  assert.equal(v.allowed, false);
  assert.equal(v.code, 403);
  assert.match(
    v.message!,
    /cannot check that ServiceAccount apps\/app may use GMSACredentialSpec "webapp-a" \(connect ECONNREFUSED 127\.0\.0\.1:6443\); the pod is refused until it can be checked/,
  );
});

test('fail closed: a review slower than its bound is a failure, not an allow', async () => {
  const kc = {
    makeApiClient: () => ({ createSubjectAccessReview: () => new Promise(() => {}) }),
  } as unknown as k8s.KubeConfig;
  const review = gmsaUseReviewer(kc, 50);
  await assert.rejects(
    review({ namespace: 'apps', serviceAccount: 'app', credentialSpec: 'webapp-a' }),
    /the SubjectAccessReview took longer than 50 ms/,
  );
  const denied = {
    makeApiClient: () => ({
      createSubjectAccessReview: async () => ({ status: { allowed: true, denied: true } }),
    }),
  } as unknown as k8s.KubeConfig;
  assert.deepEqual(
    await gmsaUseReviewer(denied)({
      namespace: 'apps',
      serviceAccount: 'app',
      credentialSpec: 'webapp-a',
    }),
    { allowed: false },
    'a denial wins over an allow',
  );
});

test('opted-out and excluded namespaces are not sent to the authorizer', async () => {
  const asked: GmsaUseQuestion[] = [];
  for (const ns of ['opted-out', 'winfleet-system']) {
    const v = await admitPodValidation(
      request({ securityContext: gmsa('webapp-b') }, ns),
      deps(authorizer(asked)),
    );
    assert.equal(v.allowed, true);
  }
  assert.deepEqual(asked, []);
});

test('placement: a pod naming a credential spec gets nodeSelector gmsa-ready=true, recorded', async () => {
  for (const spec of [
    { securityContext: gmsa('webapp-a') },
    {
      nodeSelector: undefined,
      containers: [{ name: 'c', image: 'app:1', securityContext: gmsa('webapp-a') }],
    },
  ]) {
    const r = request(spec);
    const d = await admitPodMutation(r, deps());
    const pod = applyPatch(r.object as k8s.V1Pod, d.patch!);
    assert.equal(pod.spec?.nodeSelector?.[gmsaReadyLabel], 'true');
    assert.equal(pod.spec?.nodeSelector?.['kubernetes.io/os'], 'windows');
    assert.match(
      pod.metadata?.annotations?.[mutationsAnnotation] ?? '',
      /added nodeSelector winfleet\.io\/gmsa-ready=true \(gMSA credential spec webapp-a\)/,
    );
    // Admitting the mutated pod again changes nothing.
    const again = await admitPodMutation({ ...r, object: pod as Record<string, unknown> }, deps());
    assert.deepEqual(again.patch, []);
  }
});

test('placement: what the user wrote about the label is left alone; pods without gMSA get none', async () => {
  const own = request({
    nodeSelector: { 'kubernetes.io/os': 'windows', [gmsaReadyLabel]: 'true' },
    securityContext: gmsa('webapp-a'),
  });
  const d = await admitPodMutation(own, deps());
  assert.doesNotMatch(JSON.stringify(d.patch), /gmsa-ready/);
  const plain = await admitPodMutation(request({}), deps());
  assert.doesNotMatch(JSON.stringify(plain.patch), /gmsa-ready/);
});
