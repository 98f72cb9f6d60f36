import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { validateWindowsPod } from './validate-pod.ts';

function windowsPod(
  spec: Partial<k8s.V1PodSpec> = {},
  container: Partial<k8s.V1Container> = {},
): k8s.V1Pod {
  return {
    metadata: { name: 'p' },
    spec: {
      nodeSelector: { 'kubernetes.io/os': 'windows' },
      containers: [{ name: 'app', image: 'img', ...container }],
      ...spec,
    },
  };
}

const hostProcess = (user: string | undefined, extra: Partial<k8s.V1PodSpec> = {}) =>
  windowsPod({
    hostNetwork: true,
    securityContext: { windowsOptions: { hostProcess: true, runAsUserName: user } },
    ...extra,
  });

test('a plain Windows pod, and HostProcess pods done right, pass', () => {
  assert.deepEqual(validateWindowsPod(windowsPod()), []);
  assert.deepEqual(validateWindowsPod(hostProcess('NT AUTHORITY\\SYSTEM')), []);
  assert.deepEqual(validateWindowsPod(hostProcess('nt authority\\networkservice')), []);
  assert.deepEqual(validateWindowsPod(hostProcess('winfleet-hpc-users')), [], 'a local group');
});

const cases: [string, k8s.V1Pod, RegExp][] = [
  [
    'privileged',
    windowsPod({}, { securityContext: { privileged: true } }),
    /^spec\.containers\[0\]\.securityContext\.privileged: privileged containers cannot run on Windows/,
  ],
  ['hostPID', windowsPod({ hostPID: true }), /^spec\.hostPID: /],
  ['hostIPC', windowsPod({ hostIPC: true }), /^spec\.hostIPC: /],
  [
    'hostNetwork without HostProcess',
    windowsPod({ hostNetwork: true }),
    /^spec\.hostNetwork: Windows pods use the host network only as HostProcess pods/,
  ],
  [
    'mixed HostProcess',
    {
      metadata: { name: 'p' },
      spec: {
        hostNetwork: true,
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [
          {
            name: 'a',
            image: 'i',
            securityContext: {
              windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' },
            },
          },
          { name: 'b', image: 'i' },
        ],
      },
    },
    /hostProcess: a pod cannot mix HostProcess and normal containers/,
  ],
  [
    'HostProcess as a domain user',
    hostProcess('CONTOSO\\alice'),
    /runAsUserName: HostProcess containers run as .* got "CONTOSO\\alice"/,
  ],
  ['HostProcess without a user', hostProcess(undefined), /runAsUserName: .* got nothing/],
  [
    'HostProcess without hostNetwork',
    hostProcess('NT AUTHORITY\\SYSTEM', { hostNetwork: false }),
    /^spec\.hostNetwork: HostProcess pods must set hostNetwork: true/,
  ],
  [
    'hugepages',
    windowsPod({}, { resources: { limits: { 'hugepages-2Mi': '100Mi' } } }),
    /^spec\.containers\[0\]\.resources\.limits\.hugepages-2Mi: Windows does not support huge pages/,
  ],
  [
    'seLinuxOptions',
    windowsPod({ securityContext: { seLinuxOptions: { level: 's0' } } }),
    /^spec\.securityContext\.seLinuxOptions: SELinux/,
  ],
  [
    'capabilities',
    windowsPod({}, { securityContext: { capabilities: { add: ['NET_ADMIN'] } } }),
    /^spec\.containers\[0\]\.securityContext\.capabilities: /,
  ],
  [
    'runAsUser',
    windowsPod({}, { securityContext: { runAsUser: 1000 } }),
    /securityContext\.runAsUser: Windows has no numeric user ids; remove it and use windowsOptions\.runAsUserName/,
  ],
  [
    'runAsGroup',
    windowsPod({ securityContext: { runAsGroup: 1000 } }),
    /^spec\.securityContext\.runAsGroup: /,
  ],
  [
    'procMount',
    windowsPod({}, { securityContext: { procMount: 'Unmasked' } }),
    /securityContext\.procMount: /,
  ],
  [
    'seccomp',
    windowsPod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } }),
    /^spec\.securityContext\.seccompProfile: seccomp is Linux-only/,
  ],
  [
    'apparmor',
    windowsPod({}, { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }),
    /securityContext\.appArmorProfile: AppArmor is Linux-only/,
  ],
  [
    'os conflict',
    windowsPod({ os: { name: 'linux' }, runtimeClassName: 'x' }),
    /^spec\.os\.name: is linux/,
  ],
];

for (const [name, pod, message] of cases) {
  test(`rejects ${name}, naming the field`, () => {
    const problems = validateWindowsPod(pod);
    assert.ok(
      problems.some((p) => message.test(p)),
      `${message} in ${JSON.stringify(problems)}`,
    );
  });
}

test('a gMSA credential spec must exist when the CRD is installed', () => {
  const pod = windowsPod(
    {},
    { securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapp1' } } },
  );
  assert.deepEqual(validateWindowsPod(pod), [], 'CRD absent: not checked');
  assert.deepEqual(validateWindowsPod(pod, { gmsaCredentialSpecs: new Set(['webapp1']) }), []);
  const problems = validateWindowsPod(pod, { gmsaCredentialSpecs: new Set(['other']) });
  assert.match(
    problems[0]!,
    /gmsaCredentialSpecName: GMSACredentialSpec "webapp1" does not exist; create it or fix the name/,
  );
});
