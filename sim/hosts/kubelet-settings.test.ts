import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kubeletSettings, parseKubeletConfiguration, parseTaints } from './kubelet-settings.ts';
import { nodeResources, quantityValue } from './node-resources.ts';

const windowsConfig = `
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
registerWithTaints:
  - key: os
    value: windows
    effect: NoSchedule
systemReserved:
  cpu: 500m
  memory: 2Gi
  ephemeral-storage: 1Gi
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: npipe://./pipe/containerd-containerd
rotateCertificates: true
serverTLSBootstrap: true
authentication:
  x509:
    clientCAFile: C:\\k\\ca.crt
`;

const flags = [
  '--config=C:\\k\\kubelet-config.yaml',
  '--bootstrap-kubeconfig=C:\\k\\bootstrap-kubeconfig',
  '--kubeconfig=C:\\k\\kubeconfig',
  '--cert-dir=C:\\k\\pki',
  '--hostname-override=win-1',
  '--node-ip=127.0.0.10',
  '--node-labels=winfleet.io/pool=blue,topology.kubernetes.io/zone=z1',
  '--windows-priorityclass=ABOVE_NORMAL_PRIORITY_CLASS',
  '--windows-service',
  '--v=2',
];

test("the agent's flags and a Windows KubeletConfiguration are read as the kubelet reads them", () => {
  const settings = kubeletSettings(
    flags,
    parseKubeletConfiguration(windowsConfig, 'C:\\k\\kubelet-config.yaml'),
  );
  assert.equal(settings.kubeconfigPath, 'C:\\k\\kubeconfig');
  assert.equal(settings.certDir, 'C:\\k\\pki');
  assert.equal(settings.hostnameOverride, 'win-1');
  assert.deepEqual(settings.nodeLabels, {
    'winfleet.io/pool': 'blue',
    'topology.kubernetes.io/zone': 'z1',
  });
  assert.deepEqual(settings.registerWithTaints, [
    { key: 'os', value: 'windows', effect: 'NoSchedule' },
  ]);
  assert.deepEqual(settings.systemReserved, {
    cpu: '500m',
    memory: '2Gi',
    'ephemeral-storage': '1Gi',
  });
  assert.equal(settings.serverTLSBootstrap, true);
  assert.equal(settings.windowsService, true);
  assert.equal(settings.clientCAFile, 'C:\\k\\ca.crt');
  assert.deepEqual(settings.flagWarnings, []);
  assert.equal(settings.port, 10250, 'the default port');
});

test('the kubelet API port comes from the file, then --port, and must be a port', () => {
  const config = (port: number) =>
    parseKubeletConfiguration(`${windowsConfig}\nport: ${port}\n`, 'C:\\k\\kubelet-config.yaml');
  assert.equal(kubeletSettings(flags, config(10260)).port, 10260);
  assert.equal(kubeletSettings([...flags, '--port=10270'], config(10260)).port, 10270);
  assert.throws(() => kubeletSettings([...flags, '--port=ten'], config(10260)), {
    message:
      'failed to parse kubelet flag: invalid argument "ten" for "--port" flag: strconv.ParseInt: parsing "ten": invalid syntax',
  });
  assert.throws(() => kubeletSettings(flags, config(70000)), {
    message: 'invalid configuration: port (--port) 70000 must be between 1 and 65535, inclusive',
  });
});

test('flags win over the file, and the flag forms of taints and reservations are accepted', () => {
  const settings = kubeletSettings(
    [
      ...flags,
      '--register-with-taints=os=windows:NoSchedule,dedicated:NoExecute',
      '--system-reserved=cpu=1,memory=1Gi',
      '--max-pods',
      '50',
    ],
    parseKubeletConfiguration(windowsConfig, 'x'),
  );
  assert.deepEqual(settings.registerWithTaints, [
    { key: 'os', value: 'windows', effect: 'NoSchedule' },
    { key: 'dedicated', effect: 'NoExecute' },
  ]);
  assert.deepEqual(settings.systemReserved, { cpu: '1', memory: '1Gi' });
  assert.equal(settings.maxPods, 50);
  assert.throws(() => parseTaints('os=windows'), /key\[=value\]:Effect/);
});

test('what a real kubelet refuses on Windows stops the stand-in with the same message', () => {
  assert.throws(
    () =>
      kubeletSettings(
        flags,
        parseKubeletConfiguration(
          'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n',
          'x',
        ),
      ),
    /CgroupsPerQOS \(--cgroups-per-qos\) true is not supported on Windows/,
  );
  assert.throws(
    () => kubeletSettings([...flags, '--cgroups-per-qos=false'], undefined),
    /EnforceNodeAllocatable \(--enforce-node-allocatable\) \[pods\] is not supported on Windows/,
  );
  const ok = kubeletSettings(
    [...flags, '--cgroups-per-qos=false', '--enforce-node-allocatable='],
    undefined,
  );
  assert.deepEqual(ok.enforceNodeAllocatable, []);
  assert.throws(
    () => parseKubeletConfiguration('kind: KubeletConfig\n', 'C:\\k\\c.yaml'),
    /expected apiVersion kubelet\.config\.k8s\.io\/v1beta1/,
  );
  assert.throws(
    () =>
      kubeletSettings(
        [...flags, '--windows-priorityclass=SUPER'],
        parseKubeletConfiguration(windowsConfig, 'x'),
      ),
    /unknown priority class/,
  );
});

test('allocatable is capacity minus the reservations, printed as the kubelet prints it', () => {
  const gib = 1024 ** 3;
  const resources = nodeResources(
    { cpus: 4, memoryBytes: 16 * gib, diskBytes: 127 * gib, maxPods: 110 },
    [{ cpu: '500m', memory: '2Gi', 'ephemeral-storage': '1Gi' }, {}],
  );
  assert.deepEqual(resources.capacity, {
    cpu: '4',
    memory: '16777216Ki',
    'ephemeral-storage': '133169152Ki',
    pods: '110',
  });
  assert.deepEqual(resources.allocatable, {
    cpu: '3500m',
    memory: '14680064Ki',
    'ephemeral-storage': String(126 * gib),
    pods: '110',
  });
  assert.equal(quantityValue('1.5Gi', 'x'), 1.5 * gib);
  assert.equal(quantityValue('2e3', 'x'), 2000);
  assert.throws(
    () => quantityValue('two', 'systemReserved.memory'),
    /systemReserved\.memory "two" is not a quantity/,
  );
  assert.throws(
    () => nodeResources({ cpus: 1, memoryBytes: 1, diskBytes: 1, maxPods: 1 }, [{ gpu: '1' }]),
    /cannot reserve "gpu"/,
  );
});
