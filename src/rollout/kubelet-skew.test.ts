import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { testSeed } from '../../sim/testkit/test-seed.ts';
import { checkKubeletSkew, parseKubeVersion } from './kubelet-skew.ts';

test('Kubernetes versions as clusters report them', () => {
  assert.deepEqual(parseKubeVersion('v1.36.5', 'f'), {
    major: 1,
    minor: 36,
    patch: 5,
    text: 'v1.36.5',
  });
  for (const v of [
    'v1.30.2-eks-1552ad0',
    'v1.29.4+k3s1',
    'v1.31.0-rc.1',
    'v1.28.3-gke.1286000',
    'v1.0.0',
  ]) {
    assert.equal(parseKubeVersion(v, 'f').text, v);
  }
  assert.equal(parseKubeVersion('v1.30.2-eks-1552ad0', 'f').minor, 30);
});

test('anything else is refused naming the field', () => {
  const refused: unknown[] = [
    '1.36.5',
    'v1.36',
    'v1.36.5.1',
    'v01.36.5',
    'v1.036.5',
    'V1.36.5',
    ' v1.36.5',
    'v1.36.5 ',
    'v1.36.5-',
    'v1.36.5+',
    'v1.36.5-wf..2',
    'v1.36.5\n',
    'v1.36.x',
    'v1.9999999999.0',
    '',
    36,
    null,
  ];
  for (const v of refused) {
    assert.throws(
      () => parseKubeVersion(v, 'payload.json kubernetesVersion'),
      /^WinfleetError: Cannot parse payload\.json kubernetesVersion .*expected a Kubernetes version such as "v1\.36\.5"$/s,
      String(v),
    );
  }
});

test('the kubelet may be up to three minors older than the API server, never newer', () => {
  assert.deepEqual(checkKubeletSkew('v1.36.5', 'v1.36.5'), { ok: true });
  assert.deepEqual(
    checkKubeletSkew('v1.36.6', 'v1.36.5'),
    { ok: true },
    'the policy counts minors only',
  );
  assert.deepEqual(checkKubeletSkew('v1.33.0', 'v1.36.5'), { ok: true });
  assert.deepEqual(checkKubeletSkew('v1.35.2', 'v1.36.0-rc.1'), { ok: true });
  assert.deepEqual(checkKubeletSkew('v1.34.1', 'v1.36.2-eks-1552ad0'), { ok: true });

  const newer = checkKubeletSkew('v1.37.0', 'v1.36.5');
  assert.deepEqual(newer, {
    ok: false,
    message:
      'payload.json kubernetesVersion is v1.37.0, newer than the API server v1.36.5: a kubelet may not be newer than kube-apiserver; use a payload for v1.33 to v1.36, or upgrade the control plane first',
  });
  const older = checkKubeletSkew('v1.32.9', 'v1.36.5');
  assert.deepEqual(older, {
    ok: false,
    message:
      'payload.json kubernetesVersion is v1.32.9, more than 3 minor versions older than the API server v1.36.5; use a payload for v1.33 to v1.36',
  });
  const major = checkKubeletSkew('v2.0.0', 'v1.36.5', 'kubelet');
  assert.equal(major.ok, false);
  assert.match((major as { message: string }).message, /^kubelet is v2\.0\.0 .*major version/);
  assert.throws(() => checkKubeletSkew('1.36.5', 'v1.36.5'), /payload\.json kubernetesVersion/);
  assert.throws(() => checkKubeletSkew('v1.36.5', 'v1.36'), /the API server version/);
});

test('allowed exactly when 0 ≤ api minor − kubelet minor ≤ 3 (same major)', (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 60 }),
      fc.nat(20),
      fc.nat(20),
      (kubeletMinor, apiMinor, kp, ap) => {
        const verdict = checkKubeletSkew(`v1.${kubeletMinor}.${kp}`, `v1.${apiMinor}.${ap}`);
        const expected = apiMinor - kubeletMinor >= 0 && apiMinor - kubeletMinor <= 3;
        assert.equal(verdict.ok, expected);
        if (!verdict.ok) {
          assert.match(verdict.message, new RegExp(`v1\\.${kubeletMinor}\\.${kp}`));
          assert.match(verdict.message, new RegExp(`to v1\\.${apiMinor}\\b`));
        }
      },
    ),
    { seed: testSeed(t) },
  );
});
